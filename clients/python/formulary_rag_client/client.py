"""FormularyClient: one blocking gRPC channel, one method per RPC, an x-correlation-id on every call (and
the API key, when given, as `authorization: Bearer <key>`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from formulary_rag_client._common import (
    CORRELATION_HEADER,
    UPLOAD_CHUNK_BYTES,
    Connection,
    Metadata,
    ask_request,
    assess_request,
    echoed_correlation_id,
    ingest_request,
    retrieve_request,
    understand_request,
    upload_parts,
)
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

__all__ = ["CORRELATION_HEADER", "UPLOAD_CHUNK_BYTES", "FormularyClient"]


class FormularyClient:
    """Blocking client. Every method raises RagError on failure: InvalidRequest for INVALID_ARGUMENT,
    Unauthenticated / PermissionDenied for a missing, unknown or under-scoped API key, ResourceExhausted
    (with `retry_delay`) for a rate limit or the Ask stream cap.

    `api_key` is sent on every call as `authorization: Bearer <key>`. `tls=True` uses TLS with the system
    roots; `ca_file` trusts that CA instead (and implies TLS); `client_cert` + `client_key` present a client
    certificate (mutual TLS); `server_name` overrides the name checked in the server's certificate.
    `correlation_id` on a call is sent as x-correlation-id (a fresh one is made when omitted);
    `last_correlation_id` is the id the server echoed for the latest call.
    """

    def __init__(
        self,
        target: str,
        *,
        api_key: str | None = None,
        tls: bool = False,
        ca_file: str | Path | None = None,
        client_cert: str | Path | None = None,
        client_key: str | Path | None = None,
        server_name: str | None = None,
        timeout: float = 30.0,
        channel: grpc.Channel | None = None,
    ) -> None:
        self.target = target
        self.timeout = timeout
        self._connection = Connection(target, api_key, tls, ca_file, client_cert, client_key, server_name)
        if channel is None:
            conn = self._connection
            if conn.secure:
                channel = grpc.secure_channel(target, conn.credentials(), options=conn.options())
            else:
                channel = grpc.insecure_channel(target, options=conn.options())
        self._channel = channel
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

    def _remember(self, call: Any, sent: Metadata, trailers: bool = True) -> None:
        """The id the server echoed: in the trailers of a finished call, in the headers of a stream."""
        try:
            got = call.trailing_metadata() if trailers else call.initial_metadata()
        except Exception:  # no metadata (e.g. connection refused)
            got = None
        self.last_correlation_id = echoed_correlation_id(got, sent)

    def _unary(self, method: Any, request: Any, correlation_id: str | None) -> Any:
        metadata = self._connection.metadata(correlation_id)
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
        metadata = self._connection.metadata(correlation_id)
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
        result: understanding_pb2.UnderstandResponse = self._unary(
            self._understanding.Understand, understand_request(query, conversation_id), correlation_id
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
        result: retrieval_pb2.RetrieveResponse = self._unary(
            self._retrieval.Retrieve, retrieve_request(query, drug_id, section_key, frame), correlation_id
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
        result: retrieval_pb2.AssessPatientResponse = self._unary(
            self._retrieval.AssessPatient, assess_request(drug_ids, patient), correlation_id
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
        request = ingest_request(path, check_only, embed_only, recompute_embeddings, allow_gate_failures)
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
        result: ingestion_pb2.UploadDocumentResponse = self._unary(
            self._ingestion.UploadDocument, upload_parts(source, filename, chunk_bytes), correlation_id
        )
        return result

    def ask(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> Iterator[answer_pb2.AskResponse]:
        """Progress events, the verified answer blocks, then the final message (decision, citations, ...)."""
        return self._stream(self._answer.Ask, ask_request(query, conversation_id), correlation_id, None)
