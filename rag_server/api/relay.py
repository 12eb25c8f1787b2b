"""IngestionService of a follower worker (`serve --workers`): Ingest and UploadDocument are handed to the
owner worker over its relay socket (a unix socket in the run directory), so one process ingests, keeps the
uploads and their quota, and switches generations, whichever worker a client's connection reached.
GetCorpus is answered here (the generation this worker serves).

The caller's `authorization`, `traceparent` and `tracestate` go along, and the call's x-correlation-id, so
the owner's log lines of the call carry the same id as this worker's; the deadline is the caller's. A
failure comes back as it was, status, details and trailers (google.rpc details, the owner's correlation
id and worker) included; the owner unreachable is UNAVAILABLE. A caller that goes away cancels the relayed
call (the owner stops the ingest at its next progress event).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc

from rag_server.api.calls import CORRELATION_HEADER
from rag_server.api.ingestion import IngestionServicer
from rag_server.app import App
from rag_server.call_context import current_correlation_id
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc

FORWARDED = frozenset({"authorization", "traceparent", "tracestate"})


def forwarded_metadata(context: grpc.aio.ServicerContext[Any, Any]) -> tuple[tuple[str, str], ...]:
    kept = tuple((k, v) for k, v in context.invocation_metadata() or () if k.lower() in FORWARDED)
    return (*kept, (CORRELATION_HEADER, current_correlation_id()))


async def _as_received(context: grpc.aio.ServicerContext[Any, Any], err: grpc.aio.AioRpcError) -> None:
    code = err.code()
    trailers = err.trailing_metadata() or ()
    await context.abort(code, err.details() or code.name, tuple(trailers))


class RelayIngestionServicer(IngestionServicer):
    def __init__(self, app: App, target: str) -> None:
        super().__init__(app)
        self.target = target
        self._channel: grpc.aio.Channel | None = None

    def _stub(self) -> ingestion_pb2_grpc.IngestionServiceStub:
        if self._channel is None:
            max_bytes = self.app.settings.max_message_mb * 1024 * 1024
            self._channel = grpc.aio.insecure_channel(self.target, options=[
                ("grpc.max_receive_message_length", max_bytes), ("grpc.max_send_message_length", max_bytes),
            ])
        return ingestion_pb2_grpc.IngestionServiceStub(self._channel)

    async def Ingest(
        self, request: ingestion_pb2.IngestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[ingestion_pb2.IngestResponse]:
        call = self._stub().Ingest(request, metadata=forwarded_metadata(context),
                                   timeout=context.time_remaining())
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as err:
            await _as_received(context, err)
        finally:
            if not call.done():
                call.cancel()

    async def UploadDocument(
        self, request_iterator: AsyncIterator[ingestion_pb2.UploadDocumentRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> ingestion_pb2.UploadDocumentResponse:
        call = self._stub().UploadDocument(request_iterator, metadata=forwarded_metadata(context),
                                           timeout=context.time_remaining())
        try:
            reply: ingestion_pb2.UploadDocumentResponse = await call
            return reply
        except grpc.aio.AioRpcError as err:
            await _as_received(context, err)
            raise  # not reached: abort raises
        except asyncio.CancelledError:
            call.cancel()
            raise

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
