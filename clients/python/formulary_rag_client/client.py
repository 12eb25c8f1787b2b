"""FormularyClient: one blocking gRPC channel, one method per RPC, an x-correlation-id on every call."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from formulary_rag_client.errors import from_rpc_error
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

CORRELATION_HEADER = "x-correlation-id"
UPLOAD_CHUNK_BYTES = 512 * 1024


class FormularyClient:
    """Blocking client. Every method raises RagError (InvalidRequest for INVALID_ARGUMENT) on failure.

    `correlation_id` on a call is sent as x-correlation-id (a fresh one is made when omitted);
    `last_correlation_id` is the id the server echoed for the latest call.
    """

    def __init__(self, target: str, *, timeout: float = 30.0, channel: grpc.Channel | None = None) -> None:
        self.target = target
        self.timeout = timeout
        self._channel = channel or grpc.insecure_channel(target)
        self._understanding = understanding_pb2_grpc.UnderstandingServiceStub(self._channel)
        self._retrieval = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)
        self._answer = answer_pb2_grpc.AnswerServiceStub(self._channel)
        self._ingestion = ingestion_pb2_grpc.IngestionServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.last_correlation_id = ""

    # --- plumbing -----------------------------------------------------------------------------------

    def __enter__(self) -> FormularyClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    @staticmethod
    def _metadata(correlation_id: str | None) -> tuple[tuple[str, str], ...]:
        return ((CORRELATION_HEADER, correlation_id or uuid.uuid4().hex),)

    def _remember(self, call: Any, sent: tuple[tuple[str, str], ...], trailers: bool = True) -> None:
        """The id the server echoed: in the trailers of a finished call, in the headers of a stream."""
        try:
            got = call.trailing_metadata() if trailers else call.initial_metadata()
            echoed = dict(got or ()).get(CORRELATION_HEADER)
        except Exception:  # no metadata (e.g. connection refused)
            echoed = None
        self.last_correlation_id = str(echoed) if echoed else sent[0][1]

    def _unary(self, method: Any, request: Any, correlation_id: str | None) -> Any:
        metadata = self._metadata(correlation_id)
        try:
            response, call = method.with_call(request, metadata=metadata, timeout=self.timeout)
        except grpc.RpcError as err:
            self._remember(err, metadata)
            raise from_rpc_error(err, self.last_correlation_id) from None
        self._remember(call, metadata)
        return response

    def _stream(
        self, method: Any, request: Any, correlation_id: str | None, timeout: float | None
    ) -> Iterator[Any]:
        metadata = self._metadata(correlation_id)
        call = method(request, metadata=metadata, timeout=timeout)
        try:
            self._remember(call, metadata, trailers=False)
            yield from call
        except grpc.RpcError as err:
            self._remember(err, metadata)
            raise from_rpc_error(err, self.last_correlation_id) from None
        finally:
            call.cancel()  # no-op once finished; stops the server-side stream if the caller stops early

    # --- RPCs -------------------------------------------------------------------------------------

    def health(self, service: str = "") -> str:
        """SERVING / NOT_SERVING / SERVICE_UNKNOWN for "" (the whole server) or a service name."""
        reply = self._unary(self._health.Check, health_pb2.HealthCheckRequest(service=service), None)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    def understand(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> understanding_pb2.UnderstandResponse:
        request = understanding_pb2.UnderstandRequest(query=query, conversation_id=conversation_id)
        result: understanding_pb2.UnderstandResponse = self._unary(
            self._understanding.Understand, request, correlation_id
        )
        return result

    def retrieve(
        self,
        query: str = "",
        *,
        drug_id: str = "",
        section_key: str = "",
        frame: common_pb2.QueryFrame | None = None,
        correlation_id: str | None = None,
    ) -> retrieval_pb2.RetrieveResponse:
        """By free text (`query`), or exactly by `drug_id` (+ `section_key`), or by a QueryFrame."""
        request = retrieval_pb2.RetrieveRequest(
            query=query, drug_id=drug_id, section_key=section_key, frame=frame
        )
        result: retrieval_pb2.RetrieveResponse = self._unary(
            self._retrieval.Retrieve, request, correlation_id
        )
        return result

    def lookup_indication(
        self, indication: str, *, correlation_id: str | None = None
    ) -> retrieval_pb2.LookupIndicationResponse:
        request = retrieval_pb2.LookupIndicationRequest(indication=indication)
        result: retrieval_pb2.LookupIndicationResponse = self._unary(
            self._retrieval.LookupIndication, request, correlation_id
        )
        return result

    def assess_patient(
        self,
        drug_ids: Sequence[str],
        patient: common_pb2.PatientContext | None = None,
        *,
        correlation_id: str | None = None,
    ) -> retrieval_pb2.AssessPatientResponse:
        request = retrieval_pb2.AssessPatientRequest(drug_ids=list(drug_ids), patient=patient)
        result: retrieval_pb2.AssessPatientResponse = self._unary(
            self._retrieval.AssessPatient, request, correlation_id
        )
        return result

    def list_drugs(self, *, correlation_id: str | None = None) -> list[retrieval_pb2.DrugSummary]:
        reply: retrieval_pb2.ListDrugsResponse = self._unary(
            self._retrieval.ListDrugs, retrieval_pb2.ListDrugsRequest(), correlation_id
        )
        return list(reply.drugs)

    def get_corpus(self, *, correlation_id: str | None = None) -> ingestion_pb2.GetCorpusResponse:
        result: ingestion_pb2.GetCorpusResponse = self._unary(
            self._ingestion.GetCorpus, ingestion_pb2.GetCorpusRequest(), correlation_id
        )
        return result

    def ingest(
        self,
        path: str,
        *,
        check_only: bool = False,
        embed_only: bool = False,
        recompute_embeddings: bool = False,
        allow_gate_failures: bool = False,
        timeout: float | None = None,
        correlation_id: str | None = None,
    ) -> Iterator[ingestion_pb2.IngestResponse]:
        """Progress events, then one summary. `path` is server-side: inside an ingest root, or the
        document_id UploadDocument returned. Cached embeddings are reused unless `recompute_embeddings`."""
        request = ingestion_pb2.IngestRequest(
            path=path,
            check_only=check_only,
            embed_only=embed_only,
            recompute_embeddings=recompute_embeddings,
            allow_gate_failures=allow_gate_failures,
        )
        return self._stream(self._ingestion.Ingest, request, correlation_id, timeout)

    def upload_document(
        self,
        source: Path | str | bytes,
        *,
        filename: str = "",
        chunk_bytes: int = UPLOAD_CHUNK_BYTES,
        correlation_id: str | None = None,
    ) -> ingestion_pb2.UploadDocumentResponse:
        """Stream a PDF (a local path or its bytes) to the server; returns the server-side path to ingest."""
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        name = filename or (Path(source).name if not isinstance(source, bytes) else "upload.pdf")

        def parts() -> Iterable[ingestion_pb2.UploadDocumentRequest]:
            yield ingestion_pb2.UploadDocumentRequest(
                metadata=ingestion_pb2.UploadMetadata(filename=name, size_bytes=len(data))
            )
            for start in range(0, len(data), chunk_bytes):
                yield ingestion_pb2.UploadDocumentRequest(chunk=data[start : start + chunk_bytes])

        result: ingestion_pb2.UploadDocumentResponse = self._unary(
            self._ingestion.UploadDocument, parts(), correlation_id
        )
        return result

    def ask(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> Iterator[answer_pb2.AskResponse]:
        """Progress, verified answer blocks, then the final decision (not built yet: UNIMPLEMENTED)."""
        request = answer_pb2.AskRequest(query=query, conversation_id=conversation_id)
        return self._stream(self._answer.Ask, request, correlation_id, None)
