"""AsyncFormularyClient: the same methods as FormularyClient on a grpc.aio channel (await them; `ask` and
`ingest` are async iterators). Each method is one call definition of _calls.py run on grpc.aio."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import grpc

from formulary_rag_client import _calls as calls
from formulary_rag_client._common import (
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

T = TypeVar("T")


class AsyncFormularyClient(ClientBase):
    """asyncio client: `async with AsyncFormularyClient(target, api_key=...) as client: await client.retrieve(
    ...)`. Arguments, errors and `last_correlation_id` as in FormularyClient."""

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
        channel: grpc.aio.Channel | None = None,
    ) -> None:
        conn = Connection(target, api_key, tls, ca_file, client_cert, client_key, server_name)
        if channel is None:
            if conn.secure:
                channel = grpc.aio.secure_channel(target, conn.credentials(), options=conn.options())
            else:
                channel = grpc.aio.insecure_channel(target, options=conn.options())
        super().__init__(target, conn, timeout, channel)

    # --- plumbing -----------------------------------------------------------------------------------

    async def __aenter__(self) -> AsyncFormularyClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    def _failed(self, err: grpc.aio.AioRpcError, sent: Metadata) -> Exception:
        try:
            trailers = err.trailing_metadata()
        except Exception:
            trailers = None
        self.last_correlation_id = echoed_correlation_id(trailers, sent)
        return from_rpc_error(err, self.last_correlation_id)

    async def _unary(self, call: calls.Unary[T], correlation_id: str | None) -> T:
        metadata = self._connection.metadata(correlation_id)
        rpc = self._callable(call)(call.request, metadata=metadata, timeout=self.timeout)
        try:
            reply = await rpc
        except grpc.aio.AioRpcError as err:
            raise self._failed(err, metadata) from None
        self.last_correlation_id = echoed_correlation_id(await rpc.trailing_metadata(), metadata)
        return call.result(reply)

    async def _stream(
        self, call: calls.Stream[T], correlation_id: str | None, timeout: float | None
    ) -> AsyncIterator[T]:
        metadata = self._connection.metadata(correlation_id)
        rpc = self._callable(call)(call.request, metadata=metadata, timeout=timeout)
        try:
            self.last_correlation_id = echoed_correlation_id(await rpc.initial_metadata(), metadata)
            async for item in rpc:
                yield item
        except grpc.aio.AioRpcError as err:
            raise self._failed(err, metadata) from None
        finally:
            rpc.cancel()  # no-op once finished; stops the server-side stream if the caller stops early

    # --- RPCs (one call definition each) ------------------------------------------------------------

    async def health(self, service: str = "") -> str:
        """SERVING / NOT_SERVING / SERVICE_UNKNOWN for "" (the whole server) or a service name."""
        return await self._unary(calls.health(service), None)

    async def understand(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> understanding_pb2.UnderstandResponse:
        return await self._unary(calls.understand(query, conversation_id), correlation_id)

    async def retrieve(
        self,
        query: str = "",
        *,
        drug_id: str = "",
        section_key: str = "",
        frame: common_pb2.QueryFrame | None = None,
        correlation_id: str | None = None,
    ) -> retrieval_pb2.RetrieveResponse:
        """By free text (`query`), or exactly by `drug_id` (+ `section_key`), or by a QueryFrame."""
        return await self._unary(calls.retrieve(query, drug_id, section_key, frame), correlation_id)

    async def lookup_indication(
        self, indication: str, *, correlation_id: str | None = None
    ) -> retrieval_pb2.LookupIndicationResponse:
        return await self._unary(calls.lookup_indication(indication), correlation_id)

    async def assess_patient(
        self,
        drug_ids: Sequence[str],
        patient: common_pb2.PatientContext | None = None,
        *,
        correlation_id: str | None = None,
    ) -> retrieval_pb2.AssessPatientResponse:
        return await self._unary(calls.assess_patient(drug_ids, patient), correlation_id)

    async def list_drugs(self, *, correlation_id: str | None = None) -> list[retrieval_pb2.DrugSummary]:
        return await self._unary(calls.list_drugs(), correlation_id)

    async def get_corpus(self, *, correlation_id: str | None = None) -> ingestion_pb2.GetCorpusResponse:
        return await self._unary(calls.get_corpus(), correlation_id)

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
    ) -> AsyncIterator[ingestion_pb2.IngestResponse]:
        """Progress events, then one summary (`async for event in client.ingest(...)`)."""
        call = calls.ingest(path, check_only, embed_only, recompute_embeddings, allow_gate_failures)
        return self._stream(call, correlation_id, timeout)

    async def upload_document(
        self,
        source: Path | str | bytes,
        *,
        filename: str = "",
        chunk_bytes: int = UPLOAD_CHUNK_BYTES,
        correlation_id: str | None = None,
    ) -> ingestion_pb2.UploadDocumentResponse:
        """Stream a PDF (a local path or its bytes) to the server; returns the server-side path to ingest."""
        return await self._unary(calls.upload_document(source, filename, chunk_bytes), correlation_id)

    def ask(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> AsyncIterator[answer_pb2.AskResponse]:
        """Progress events, the verified answer blocks, then the final message (`async for event in ...`)."""
        return self._stream(calls.ask(query, conversation_id), correlation_id, None)


__all__ = ["AsyncFormularyClient"]
