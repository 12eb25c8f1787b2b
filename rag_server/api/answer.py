"""AnswerService: grounded answers streamed as verified blocks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from rag_server.api.errors import unimplemented
from rag_server.api.validation import Violations
from rag_server.app import App
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc


class AnswerServicer(answer_pb2_grpc.AnswerServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app

    async def Ask(
        self, request: answer_pb2.AskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[answer_pb2.AskResponse]:
        v = Violations()
        v.check_query("query", request.query)
        v.check_conversation_id("conversation_id", request.conversation_id)
        v.raise_if_any()
        raise unimplemented(
            "grounded generation (generate -> grounding.verify -> entailment) is not built yet; "
            "use RetrievalService/Retrieve for cited evidence"
        )
        yield answer_pb2.AskResponse()  # pragma: no cover - makes this an async generator
