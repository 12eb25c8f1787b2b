"""The call definitions of the client: for every public method, the RPC it calls (the service's stub and
the method's name), whether the server streams the reply, the request it sends and what the method returns
of the reply. The blocking client (client.py) and the asyncio client (aio.py) both run these; each only
adds how a call is made on its kind of channel (`Calls._unary` and `_stream` there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from grpc_health.v1 import health_pb2, health_pb2_grpc

from formulary_rag_client.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    common_pb2,
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    understanding_pb2,
    understanding_pb2_grpc,
)

T = TypeVar("T")

# The stubs a client makes on its channel (the same classes serve a blocking and a grpc.aio channel).
STUBS: dict[str, Callable[[Any], Any]] = {
    "understanding": understanding_pb2_grpc.UnderstandingServiceStub,
    "retrieval": retrieval_pb2_grpc.RetrievalServiceStub,
    "answer": answer_pb2_grpc.AnswerServiceStub,
    "ingestion": ingestion_pb2_grpc.IngestionServiceStub,
    "health": health_pb2_grpc.HealthStub,
}


def _reply(reply: Any) -> Any:
    return reply


@dataclass(frozen=True)
class Unary(Generic[T]):
    """One request (or a client stream of them), one reply; the method returns `result(reply)`."""

    stub: str
    method: str
    request: Any
    result: Callable[[Any], T] = _reply


@dataclass(frozen=True)
class Stream(Generic[T]):
    """One request, a stream of replies (each returned as it is)."""

    stub: str
    method: str
    request: Any


# --- the table: one definition per public method of both clients ---------------------------------------


def health(service: str) -> Unary[str]:
    def status(reply: health_pb2.HealthCheckResponse) -> str:
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    return Unary("health", "Check", health_pb2.HealthCheckRequest(service=service), status)


def understand(query: str, conversation_id: str) -> Unary[understanding_pb2.UnderstandResponse]:
    request = understanding_pb2.UnderstandRequest(query=query, conversation_id=conversation_id)
    return Unary("understanding", "Understand", request)


def retrieve(
    query: str, drug_id: str, section_key: str, frame: common_pb2.QueryFrame | None
) -> Unary[retrieval_pb2.RetrieveResponse]:
    request = retrieval_pb2.RetrieveRequest(
        query=query, drug_id=drug_id, section_key=section_key, frame=frame
    )
    return Unary("retrieval", "Retrieve", request)


def lookup_indication(indication: str) -> Unary[retrieval_pb2.LookupIndicationResponse]:
    request = retrieval_pb2.LookupIndicationRequest(indication=indication)
    return Unary("retrieval", "LookupIndication", request)


def assess_patient(
    drug_ids: Sequence[str], patient: common_pb2.PatientContext | None
) -> Unary[retrieval_pb2.AssessPatientResponse]:
    request = retrieval_pb2.AssessPatientRequest(drug_ids=list(drug_ids), patient=patient)
    return Unary("retrieval", "AssessPatient", request)


def list_drugs() -> Unary[list[retrieval_pb2.DrugSummary]]:
    def drugs(reply: retrieval_pb2.ListDrugsResponse) -> list[retrieval_pb2.DrugSummary]:
        return list(reply.drugs)

    return Unary("retrieval", "ListDrugs", retrieval_pb2.ListDrugsRequest(), drugs)


def get_corpus() -> Unary[ingestion_pb2.GetCorpusResponse]:
    return Unary("ingestion", "GetCorpus", ingestion_pb2.GetCorpusRequest())


def ingest(
    path: str, check_only: bool, embed_only: bool, recompute_embeddings: bool, allow_gate_failures: bool
) -> Stream[ingestion_pb2.IngestResponse]:
    request = ingestion_pb2.IngestRequest(
        path=path,
        check_only=check_only,
        embed_only=embed_only,
        recompute_embeddings=recompute_embeddings,
        allow_gate_failures=allow_gate_failures,
    )
    return Stream("ingestion", "Ingest", request)


def upload_document(
    source: Path | str | bytes, filename: str, chunk_bytes: int
) -> Unary[ingestion_pb2.UploadDocumentResponse]:
    """UploadDocument's stream: the metadata, then the bytes in chunks. The file (a local path, or the
    bytes) is read now, so a missing file raises here rather than inside the call."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    name = filename or (Path(source).name if not isinstance(source, bytes) else "upload.pdf")

    def parts() -> Iterator[ingestion_pb2.UploadDocumentRequest]:
        yield ingestion_pb2.UploadDocumentRequest(
            metadata=ingestion_pb2.UploadMetadata(filename=name, size_bytes=len(data))
        )
        for start in range(0, len(data), chunk_bytes):
            yield ingestion_pb2.UploadDocumentRequest(chunk=data[start : start + chunk_bytes])

    return Unary("ingestion", "UploadDocument", parts())


def ask(query: str, conversation_id: str) -> Stream[answer_pb2.AskResponse]:
    return Stream("answer", "Ask", answer_pb2.AskRequest(query=query, conversation_id=conversation_id))
