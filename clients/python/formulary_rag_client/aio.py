"""AsyncFormularyClient: the same methods as FormularyClient on a grpc.aio channel (await them; `ask` and
`ingest` are async iterators)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from formulary_rag_client._common import (
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


class AsyncFormularyClient:
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
        self.target = target
        self.timeout = timeout
        self._connection = Connection(target, api_key, tls, ca_file, client_cert, client_key, server_name)
        if channel is None:
            conn = self._connection
            if conn.secure:
                channel = grpc.aio.secure_channel(target, conn.credentials(), options=conn.options())
            else:
                channel = grpc.aio.insecure_channel(target, options=conn.options())
        self._channel = channel
        self._understanding: Any = understanding_pb2_grpc.UnderstandingServiceStub(self._channel)
        self._retrieval: Any = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)
        self._answer: Any = answer_pb2_grpc.AnswerServiceStub(self._channel)
        self._ingestion: Any = ingestion_pb2_grpc.IngestionServiceStub(self._channel)
        self._health: Any = health_pb2_grpc.HealthStub(self._channel)
        self.last_correlation_id = ""

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

    async def _unary(self, method: Any, request: Any, correlation_id: str | None) -> Any:
        metadata = self._connection.metadata(correlation_id)
        call = method(request, metadata=metadata, timeout=self.timeout)
        try:
            response = await call
        except grpc.aio.AioRpcError as err:
            raise self._failed(err, metadata) from None
        self.last_correlation_id = echoed_correlation_id(await call.trailing_metadata(), metadata)
        return response

    async def _stream(
        self, method: Any, request: Any, correlation_id: str | None, timeout: float | None
    ) -> AsyncIterator[Any]:
        metadata = self._connection.metadata(correlation_id)
        call = method(request, metadata=metadata, timeout=timeout)
        try:
            self.last_correlation_id = echoed_correlation_id(await call.initial_metadata(), metadata)
            async for item in call:
                yield item
        except grpc.aio.AioRpcError as err:
            raise self._failed(err, metadata) from None
        finally:
            call.cancel()  # no-op once finished; stops the server-side stream if the caller stops early

    # --- RPCs -------------------------------------------------------------------------------------

    async def health(self, service: str = "") -> str:
        """SERVING / NOT_SERVING / SERVICE_UNKNOWN for "" (the whole server) or a service name."""
        reply = await self._unary(self._health.Check, health_pb2.HealthCheckRequest(service=service), None)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    async def understand(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> understanding_pb2.UnderstandResponse:
        result: understanding_pb2.UnderstandResponse = await self._unary(
            self._understanding.Understand, understand_request(query, conversation_id), correlation_id
        )
        return result

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
        result: retrieval_pb2.RetrieveResponse = await self._unary(
            self._retrieval.Retrieve, retrieve_request(query, drug_id, section_key, frame), correlation_id
        )
        return result

    async def lookup_indication(
        self, indication: str, *, correlation_id: str | None = None
    ) -> retrieval_pb2.LookupIndicationResponse:
        request = retrieval_pb2.LookupIndicationRequest(indication=indication)
        result: retrieval_pb2.LookupIndicationResponse = await self._unary(
            self._retrieval.LookupIndication, request, correlation_id
        )
        return result

    async def assess_patient(
        self,
        drug_ids: Sequence[str],
        patient: common_pb2.PatientContext | None = None,
        *,
        correlation_id: str | None = None,
    ) -> retrieval_pb2.AssessPatientResponse:
        result: retrieval_pb2.AssessPatientResponse = await self._unary(
            self._retrieval.AssessPatient, assess_request(drug_ids, patient), correlation_id
        )
        return result

    async def list_drugs(self, *, correlation_id: str | None = None) -> list[retrieval_pb2.DrugSummary]:
        reply: retrieval_pb2.ListDrugsResponse = await self._unary(
            self._retrieval.ListDrugs, retrieval_pb2.ListDrugsRequest(), correlation_id
        )
        return list(reply.drugs)

    async def get_corpus(self, *, correlation_id: str | None = None) -> ingestion_pb2.GetCorpusResponse:
        result: ingestion_pb2.GetCorpusResponse = await self._unary(
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
    ) -> AsyncIterator[ingestion_pb2.IngestResponse]:
        """Progress events, then one summary (`async for event in client.ingest(...)`)."""
        request = ingest_request(path, check_only, embed_only, recompute_embeddings, allow_gate_failures)
        return self._stream(self._ingestion.Ingest, request, correlation_id, timeout)

    async def upload_document(
        self,
        source: Path | str | bytes,
        *,
        filename: str = "",
        chunk_bytes: int = UPLOAD_CHUNK_BYTES,
        correlation_id: str | None = None,
    ) -> ingestion_pb2.UploadDocumentResponse:
        """Stream a PDF (a local path or its bytes) to the server; returns the server-side path to ingest."""
        result: ingestion_pb2.UploadDocumentResponse = await self._unary(
            self._ingestion.UploadDocument, upload_parts(source, filename, chunk_bytes), correlation_id
        )
        return result

    def ask(
        self, query: str, *, conversation_id: str = "", correlation_id: str | None = None
    ) -> AsyncIterator[answer_pb2.AskResponse]:
        """Progress events, the verified answer blocks, then the final message (`async for event in ...`)."""
        return self._stream(self._answer.Ask, ask_request(query, conversation_id), correlation_id, None)
