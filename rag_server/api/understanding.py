"""UnderstandingService: question -> QueryFrame."""

from __future__ import annotations

from typing import Any

import grpc

from rag_server.api.errors import unimplemented
from rag_server.api.validation import Violations
from rag_server.app import App
from rag_server.gen.rag.v1 import understanding_pb2, understanding_pb2_grpc


class UnderstandingServicer(understanding_pb2_grpc.UnderstandingServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app

    async def Understand(
        self, request: understanding_pb2.UnderstandRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> understanding_pb2.UnderstandResponse:
        v = Violations()
        v.check_query("query", request.query)
        v.check_conversation_id("conversation_id", request.conversation_id)
        v.raise_if_any()
        raise unimplemented("query understanding (drug/section resolvers) is not wired yet")
