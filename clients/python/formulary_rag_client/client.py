"""FormularyClient: one blocking gRPC channel, one method per RPC, an x-correlation-id on every call (and
the API key, when given, as `authorization: Bearer <key>`). Each method is one call definition of _calls.py
(the same ones AsyncFormularyClient runs), made here on a blocking channel."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import grpc

from formulary_rag_client import _calls as calls
from formulary_rag_client._common import (
    CORRELATION_HEADER,
    UPLOAD_CHUNK_BYTES,
    ClientBase,
    Connection,
    Metadata,
    echoed_correlation_id,
)
from formulary_rag_client.errors import from_rpc_error
from formulary_rag_client.gen.rag.v1 import (
    answer_pb2,
    common_pb2,
    ingestion_pb2,
    retrieval_pb2,
    understanding_pb2,
)

__all__ = ["CORRELATION_HEADER", "UPLOAD_CHUNK_BYTES", "FormularyClient"]

T = TypeVar("T")


class FormularyClient(ClientBase):
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
        conn = Connection(target, api_key, tls, ca_file, client_cert, client_key, server_name)
        if channel is None:
            if conn.secure:
                channel = grpc.secure_channel(target, conn.credentials(), options=conn.options())
            else:
                channel = grpc.insecure_channel(target, options=conn.options())
        super().__init__(target, conn, timeout, channel)

    # --- plumbing -----------------------------------------------------------------------------------

    def __enter__(self) -> FormularyClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _remember(self, rpc: Any, sent: Metadata, trailers: bool = True) -> None:
        """The id the server echoed: in the trailers of a finished call, in the headers of a stream."""
        try:
            got = rpc.trailing_metadata() if trailers else rpc.initial_metadata()
        except Exception:  # no metadata (e.g. connection refused)
            got = None
        self.last_correlation_id = echoed_correlation_id(got, sent)

    def _unary(self, call: calls.Unary[T], correlation_id: str | None) -> T:
        metadata = self._connection.metadata(correlation_id)
        try:
            reply, rpc = self._callable(call).with_call(call.request, metadata=metadata, timeout=self.timeout)
        except grpc.RpcError as err:
            self._remember(err, metadata)
            raise from_rpc_error(err, self.last_correlation_id) from None
        self._remember(rpc, metadata)
        return call.result(reply)

    def _stream(
        self, call: calls.Stream[T], correlation_id: str | None, timeout: float | None
    ) -> Iterator[T]:
        metadata = self._connection.metadata(correlation_id)
        rpc = self._callable(call)(call.request, metadata=metadata, timeout=timeout)
        try:
            self._remember(rpc, metadata, trailers=False)
            yield from rpc
        except grpc.RpcError as err:
            self._remember(err, metadata)
            raise from_rpc_error(err, self.last_correlation_id) from None
        finally:
            rpc.cancel()  # no-op once finished; stops the server-side stream if the caller stops early

    # --- RPCs (one call definition each) ------------------------------------------------------------

    def health(self, service: str = "") -> str:
        """SERVING / NOT_SERVING / SERVICE_UNKNOWN for "" (the whole server) or a service name."""
        return self._unary(calls.health(service), None)

    def understand(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> understanding_pb2.UnderstandResponse:
        return self._unary(calls.understand(query, conversation_id), correlation_id)

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
        return self._unary(calls.retrieve(query, drug_id, section_key, frame), correlation_id)

    def lookup_indication(
        self, indication: str, *, correlation_id: str | None = None
    ) -> retrieval_pb2.LookupIndicationResponse:
        return self._unary(calls.lookup_indication(indication), correlation_id)

    def assess_patient(
        self,
        drug_ids: Sequence[str],
        patient: common_pb2.PatientContext | None = None,
        *,
        correlation_id: str | None = None,
    ) -> retrieval_pb2.AssessPatientResponse:
        return self._unary(calls.assess_patient(drug_ids, patient), correlation_id)

    def list_drugs(self, *, correlation_id: str | None = None) -> list[retrieval_pb2.DrugSummary]:
        return self._unary(calls.list_drugs(), correlation_id)

    def get_corpus(self, *, correlation_id: str | None = None) -> ingestion_pb2.GetCorpusResponse:
        return self._unary(calls.get_corpus(), correlation_id)

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
        call = calls.ingest(path, check_only, embed_only, recompute_embeddings, allow_gate_failures)
        return self._stream(call, correlation_id, timeout)

    def upload_document(
        self,
        source: Path | str | bytes,
        *,
        filename: str = "",
        chunk_bytes: int = UPLOAD_CHUNK_BYTES,
        correlation_id: str | None = None,
    ) -> ingestion_pb2.UploadDocumentResponse:
        """Stream a PDF (a local path or its bytes) to the server; returns the server-side path to ingest."""
        return self._unary(calls.upload_document(source, filename, chunk_bytes), correlation_id)

    def ask(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> Iterator[answer_pb2.AskResponse]:
        """Progress events, the verified answer blocks, then the final message (decision, citations, ...)."""
        return self._stream(calls.ask(query, conversation_id), correlation_id, None)
