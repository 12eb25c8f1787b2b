"""A small typed Python client for the formulary-rag gRPC service (rag.v1).

    from formulary_rag_client import FormularyClient, InvalidRequest

    with FormularyClient("127.0.0.1:50051") as client:
        reply = client.retrieve(drug_id="zentavir", section_key="chong_chi_dinh")

It uses the generated stubs of the `formulary-rag` package (`rag_server.gen`), so install the repo
(`pip install -e .`) or put it on PYTHONPATH.
"""

from formulary_rag_client.client import FormularyClient
from formulary_rag_client.errors import FieldViolation, InvalidRequest, RagError

__all__ = ["FieldViolation", "FormularyClient", "InvalidRequest", "RagError"]
