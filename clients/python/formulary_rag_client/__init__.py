"""A small typed Python client for the formulary-rag gRPC service (rag.v1).

    from formulary_rag_client import FormularyClient, InvalidRequest

    with FormularyClient("127.0.0.1:50051") as client:
        reply = client.retrieve(drug_id="zentavir", section_key="chong_chi_dinh")

Install it with `pip install ./clients/python`: it ships its own generated code
(`formulary_rag_client.gen`) and does not need the server package.
"""

from formulary_rag_client.client import FormularyClient
from formulary_rag_client.errors import FieldViolation, InvalidRequest, RagError

__all__ = ["FieldViolation", "FormularyClient", "InvalidRequest", "RagError"]
