"""What the blocking and the asyncio clients share: channel credentials, call metadata and requests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from formulary_rag_client.gen.rag.v1 import (
    answer_pb2,
    common_pb2,
    ingestion_pb2,
    retrieval_pb2,
    understanding_pb2,
)

CORRELATION_HEADER = "x-correlation-id"
AUTH_HEADER = "authorization"
UPLOAD_CHUNK_BYTES = 512 * 1024
Metadata = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Connection:
    """How to reach the server: the target, TLS (a CA file to trust instead of the system roots, a client
    certificate and key for mutual TLS, a server name to check instead of the target's host) and the API
    key sent on every call."""

    target: str
    api_key: str | None = None
    tls: bool = False
    ca_file: str | Path | None = None
    client_cert: str | Path | None = None
    client_key: str | Path | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        if self.api_key is not None and (not self.api_key or any(c in self.api_key for c in "\r\n")):
            raise ValueError("api_key must be a non-empty single-line string")
        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")

    @property
    def secure(self) -> bool:
        return self.tls or self.ca_file is not None or self.client_cert is not None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: str | Path | None) -> bytes | None:
            return Path(path).read_bytes() if path is not None else None

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.ca_file),
            private_key=read(self.client_key),
            certificate_chain=read(self.client_cert),
        )

    def options(self, extra: Sequence[tuple[str, object]] = ()) -> list[tuple[str, object]]:
        options = list(extra)
        if self.server_name:
            options.append(("grpc.ssl_target_name_override", self.server_name))
        return options

    def metadata(self, correlation_id: str | None) -> Metadata:
        """x-correlation-id (yours or a fresh one) first, then the API key when there is one."""
        pairs: list[tuple[str, str]] = [(CORRELATION_HEADER, correlation_id or uuid.uuid4().hex)]
        if self.api_key:
            pairs.append((AUTH_HEADER, f"Bearer {self.api_key}"))
        return tuple(pairs)


def echoed_correlation_id(got: Any, sent: Metadata) -> str:
    """The id the server echoed in `got` (headers or trailers), else the one sent."""
    for item in got or ():
        if item[0] == CORRELATION_HEADER and item[1]:
            return str(item[1])
    return sent[0][1]


# --- requests ------------------------------------------------------------------------------------------


def understand_request(query: str, conversation_id: str) -> understanding_pb2.UnderstandRequest:
    return understanding_pb2.UnderstandRequest(query=query, conversation_id=conversation_id)


def retrieve_request(
    query: str, drug_id: str, section_key: str, frame: common_pb2.QueryFrame | None
) -> retrieval_pb2.RetrieveRequest:
    return retrieval_pb2.RetrieveRequest(query=query, drug_id=drug_id, section_key=section_key, frame=frame)


def assess_request(
    drug_ids: Sequence[str], patient: common_pb2.PatientContext | None
) -> retrieval_pb2.AssessPatientRequest:
    return retrieval_pb2.AssessPatientRequest(drug_ids=list(drug_ids), patient=patient)


def ingest_request(
    path: str, check_only: bool, embed_only: bool, recompute_embeddings: bool, allow_gate_failures: bool
) -> ingestion_pb2.IngestRequest:
    return ingestion_pb2.IngestRequest(
        path=path,
        check_only=check_only,
        embed_only=embed_only,
        recompute_embeddings=recompute_embeddings,
        allow_gate_failures=allow_gate_failures,
    )


def upload_parts(
    source: Path | str | bytes, filename: str, chunk_bytes: int
) -> Iterator[ingestion_pb2.UploadDocumentRequest]:
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

    return parts()


def ask_request(query: str, conversation_id: str) -> answer_pb2.AskRequest:
    return answer_pb2.AskRequest(query=query, conversation_id=conversation_id)
