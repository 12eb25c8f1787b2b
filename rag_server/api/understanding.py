"""UnderstandingService: question -> QueryFrame (deterministic: catalog, section phrases, patient rules)."""

from __future__ import annotations

from typing import Any

import grpc

from rag_server.answer.memory import ConversationNotOwned
from rag_server.api import convert
from rag_server.api.errors import conversation_not_owned
from rag_server.api.validation import Violations
from rag_server.api.work import run_cheap_first
from rag_server.app import App
from rag_server.domain import Reason
from rag_server.gen.rag.v1 import understanding_pb2, understanding_pb2_grpc
from rag_server.observability.hooks import note_question
from rag_server.reasons import make_decision
from rag_server.retrieval.retriever import Retriever
from rag_server.retrieval.timing import Timings
from rag_server.security.auth import conversation_owner
from rag_server.understanding.frame import Understanding


def _understand(retriever: Retriever, query: str, timings: Timings) -> tuple[Understanding, bool]:
    return retriever.understand(query, timings), retriever.loaded()


class UnderstandingServicer(understanding_pb2_grpc.UnderstandingServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app

    async def Understand(
        self, request: understanding_pb2.UnderstandRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> understanding_pb2.UnderstandResponse:
        note_question(request.query)  # kept out of logs (RAG_LOG_QUESTIONS)
        v = Violations()
        v.check_query("query", request.query)
        v.check_conversation_id("conversation_id", request.conversation_id)
        v.raise_if_any()
        if request.conversation_id:
            await self._check_owner(request.conversation_id)
        retriever = self.app.retriever()
        timings = Timings()
        understanding, loaded = await run_cheap_first(
            context, self.app.executor, _understand, retriever, request.query, timings,
            try_inline=len(request.query) <= self.app.settings.inline_query_chars,
        )
        response = understanding_pb2.UnderstandResponse(
            frame=convert.frame(understanding.frame), timings=convert.timings(timings)
        )
        if understanding.reason:
            decided = make_decision(understanding.reason, detail=understanding.detail)
            response.decision.CopyFrom(convert.decision(decided))
        elif not loaded:
            # Without a corpus no drug name can be resolved: say so rather than a misleading frame.
            response.decision.CopyFrom(convert.decision(make_decision(Reason.CORPUS_NOT_LOADED)))
        return response

    async def _check_owner(self, conversation_id: str) -> None:
        """Another caller's conversation is PERMISSION_DENIED (CONVERSATION_NOT_OWNED), as for Ask."""
        parts = self.app.answers
        if parts is None:
            return
        try:
            await parts.memory.check_owner(conversation_id, conversation_owner())
        except ConversationNotOwned as exc:
            raise conversation_not_owned(exc.conversation_id) from None
