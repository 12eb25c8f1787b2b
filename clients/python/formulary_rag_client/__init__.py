"""A small typed Python client for the formulary-rag gRPC service (rag.v1), blocking and asyncio.

    from formulary_rag_client import FormularyClient, InvalidRequest

    with FormularyClient("127.0.0.1:50051", api_key=KEY) as client:   # api_key: when the server has keys
        reply = client.retrieve(drug_id="zentavir", section_key="chong_chi_dinh")

    async with AsyncFormularyClient("127.0.0.1:50051", api_key=KEY) as client:
        reply = await client.retrieve(drug_id="zentavir", section_key="chong_chi_dinh")

Install it with `pip install ./clients/python`: it ships its own generated code
(`formulary_rag_client.gen`) and does not need the server package.
"""

from formulary_rag_client.aio import AsyncFormularyClient
from formulary_rag_client.client import FormularyClient
from formulary_rag_client.errors import (
    FieldViolation,
    InvalidRequest,
    PermissionDenied,
    RagError,
    ResourceExhausted,
    Unauthenticated,
)

__all__ = [
    "AsyncFormularyClient",
    "FieldViolation",
    "FormularyClient",
    "InvalidRequest",
    "PermissionDenied",
    "RagError",
    "ResourceExhausted",
    "Unauthenticated",
]
