"""Example: list the drugs, retrieve one section exactly, and show a rejected request.

pip install ./clients/python; python clients/python/example.py [target]
(default $RAG_TARGET or 127.0.0.1:50051; $RAG_API_KEY, when set, is sent on every call)
"""

from __future__ import annotations

import os
import sys

from formulary_rag_client import FormularyClient, InvalidRequest, RagError
from google.protobuf.json_format import MessageToDict


def main(argv: list[str]) -> int:
    target = argv[1] if len(argv) > 1 else os.environ.get("RAG_TARGET", "127.0.0.1:50051")
    with FormularyClient(target, api_key=os.environ.get("RAG_API_KEY") or None) as client:
        try:
            corpus = client.get_corpus()
            print(f"corpus loaded={corpus.loaded} monographs={corpus.manifest.monograph_count}")
            drugs = client.list_drugs()
            for drug in drugs:
                print(f"  {drug.drug_id:24} {drug.display_name} ({len(drug.section_keys)} sections)")
            if not drugs:
                return 1
            drug = drugs[0]
            section = "chong_chi_dinh" if "chong_chi_dinh" in drug.section_keys else drug.section_keys[0]
            reply = client.retrieve(drug_id=drug.drug_id, section_key=section)
            print(f"Retrieve {drug.drug_id}/{section} (correlation id {client.last_correlation_id}):")
            print(MessageToDict(reply.decision, preserving_proto_field_name=True))
            for evidence in reply.evidence:
                pages = ", ".join(str(r.printed_page or r.physical_page) for r in evidence.source_refs)
                print(f"  [{evidence.chunk_id}] p. {pages}: {evidence.text[:80]}...")
        except RagError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        try:
            client.retrieve(drug_id="Not A Slug")
        except InvalidRequest as err:
            print("rejected as expected:", [(v.field, v.description) for v in err.violations])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
