"""clients/python (formulary_rag_client) against a real `rag-server serve` subprocess."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from formulary_rag_client import FormularyClient, InvalidRequest
from formulary_rag_client.gen.rag.v1 import common_pb2

pytestmark = pytest.mark.e2e


@pytest.fixture
def client(shared_server: Any) -> Any:
    with FormularyClient(shared_server.target, timeout=60) as c:
        yield c


def test_health_and_correlation_id(client: FormularyClient) -> None:
    assert client.health() == "SERVING"
    assert client.health("rag.v1.RetrievalService") == "SERVING"
    client.get_corpus(correlation_id="py-client-1")
    assert client.last_correlation_id == "py-client-1"
    client.get_corpus(correlation_id="bad id!")
    assert client.last_correlation_id not in ("", "bad id!")


def test_bad_request_surfaces_field_violations(client: FormularyClient) -> None:
    with pytest.raises(InvalidRequest) as info:
        client.retrieve(drug_id="Not A Slug", section_key="nope", correlation_id="py-bad-1")
    err = info.value
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert {v.field for v in err.violations} == {"drug_id", "section_key"}
    assert err.correlation_id == "py-bad-1"
    assert "drug_id:" in str(err)
    with pytest.raises(InvalidRequest) as info:
        client.assess_patient(["ok-drug", "BAD"], common_pb2.PatientContext(breastfeeding=True))
    assert [v.field for v in info.value.violations] == ["drug_ids[1]"]


def test_ask_streams_a_cited_answer(client: FormularyClient) -> None:
    events = list(client.ask("liều dùng của novadiamin", correlation_id="py-ask-1"))
    final = events[-1].final
    assert events[-1].WhichOneof("event") == "final"
    assert final.decision.kind == common_pb2.DECISION_KIND_ANSWERABLE
    assert final.citations and all(c.source.printed_page > 0 for c in final.citations)
    assert final.correlation_id == "py-ask-1"
    with pytest.raises(InvalidRequest):
        list(client.ask(""))


def test_sample_corpus_is_loaded(client: FormularyClient) -> None:
    corpus = client.get_corpus()
    assert corpus.loaded, "the fictional sample formulary should be loaded on first start"
    assert corpus.manifest.monograph_count >= 2
    assert corpus.manifest.chunk_count >= corpus.manifest.monograph_count
    assert corpus.manifest.embedding_model


def test_list_drugs_and_retrieve_a_section(client: FormularyClient) -> None:
    drugs = client.list_drugs()
    assert drugs, "ListDrugs returned nothing on the sample corpus"
    drug = next(d for d in drugs if "chong_chi_dinh" in d.section_keys)
    reply = client.retrieve(drug_id=drug.drug_id, section_key="chong_chi_dinh")
    assert reply.decision.kind in (common_pb2.DECISION_KIND_ANSWERABLE, common_pb2.DECISION_KIND_VERIFY_PDF)
    assert reply.evidence
    assert all(e.drug_id == drug.drug_id and e.section_key == "chong_chi_dinh" for e in reply.evidence)
    assert [e.part_index for e in reply.evidence] == sorted(e.part_index for e in reply.evidence)
    assert all(e.source_refs for e in reply.evidence)


def test_upload_then_check_only_ingest(client: FormularyClient, shared_server: Any) -> None:
    sample = shared_server.data_dir / "sample" / "sample-formulary.pdf"
    if not sample.exists():
        pytest.fail(f"the server did not write the sample PDF at {sample}")
    uploaded = client.upload_document(sample, chunk_bytes=4096)
    assert uploaded.size_bytes == sample.stat().st_size
    assert len(uploaded.document_id) == 16 and uploaded.sha256.startswith(uploaded.document_id)
    events = list(client.ingest(uploaded.document_id, check_only=True, timeout=300))
    assert events[-1].WhichOneof("event") == "summary"
    assert any(e.WhichOneof("event") == "progress" for e in events[:-1])
    summary = events[-1].summary
    assert summary.switched is False  # check_only changes nothing
    assert {g.name for g in summary.gates}
    assert client.get_corpus().loaded


def test_upload_rejects_non_pdf(client: FormularyClient) -> None:
    with pytest.raises(InvalidRequest) as info:
        client.upload_document(b"hello, not a pdf", filename="x.pdf")
    assert info.value.violations
