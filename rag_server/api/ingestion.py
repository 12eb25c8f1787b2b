"""IngestionService: PDF -> store, upload, manifest."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from rag_server.api.errors import unimplemented
from rag_server.api.validation import Violations
from rag_server.app import App
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc


class IngestionServicer(ingestion_pb2_grpc.IngestionServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app

    async def Ingest(  # type: ignore[override]
        self, request: ingestion_pb2.IngestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[ingestion_pb2.IngestResponse]:
        v = Violations()
        if not request.path:
            v.add("path", "must name a PDF inside a configured ingest root, or an uploaded document path")
        v.raise_if_any()
        raise unimplemented("ingestion pipeline")
        yield ingestion_pb2.IngestResponse()  # pragma: no cover

    async def UploadDocument(
        self,
        request_iterator: AsyncIterator[ingestion_pb2.UploadDocumentRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> ingestion_pb2.UploadDocumentResponse:
        raise unimplemented("document upload")

    async def GetCorpus(
        self, request: ingestion_pb2.GetCorpusRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ingestion_pb2.GetCorpusResponse:
        raise unimplemented("corpus manifest (ingestion)")
