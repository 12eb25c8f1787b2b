"""UnderstandingService: question (+ conversation) -> the QueryFrame Ask would act on: the same reading, by
the same understander, with the same earlier turns (answer.pipeline.understand)."""

from __future__ import annotations

from typing import Any

import grpc

from rag_server.answer.memory import ConversationNotOwned, prior_of
from rag_server.answer.pipeline import understand
from rag_server.api import convert
from rag_server.api.validation import Violations
from rag_server.api.work import schedule
from rag_server.app import App
from rag_server.domain import Reason
from rag_server.gen.rag.v1 import understanding_pb2, understanding_pb2_grpc
from rag_server.observability.hooks import note_question
from rag_server.providers.base import MalformedOutput, ProviderError
from rag_server.reasons import make_decision
from rag_server.request_errors import conversation_not_owned
from rag_server.retrieval.timing import Timings
from rag_server.security.auth import conversation_owner
from rag_server.understanding.frame import Prior, SituationKind


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
        parts = self.app.answers
        assert parts is not None, "the app was not started"
        prior = Prior()
        if request.conversation_id:
            try:
                turns = await parts.memory.recent(request.conversation_id, parts.config.memory_turns,
                                                  conversation_owner())
            except ConversationNotOwned as exc:
                raise conversation_not_owned(exc.conversation_id) from None
            prior = prior_of(turns)
        corpus = self.app.corpus
        timings = Timings()
        cheap = len(request.query) <= self.app.settings.inline_query_chars
        with timings.stage("understand"):
            try:
                reading = await understand(request.query, prior, corpus, parts.understander,
                                           schedule(context, self.app.executor, try_inline=cheap))
            except (ProviderError, MalformedOutput) as exc:
                reason = (Reason.UNDERSTANDING_PROVIDER_UNAVAILABLE if isinstance(exc, ProviderError)
                          else Reason.UNDERSTANDING_MALFORMED_OUTPUT)
                return understanding_pb2.UnderstandResponse(decision=convert.decision(make_decision(reason)))
        response = understanding_pb2.UnderstandResponse(
            frame=convert.frame(reading.frame), timings=convert.timings(timings)
        )
        situation = reading.frame.situation
        if situation.kind is SituationKind.HARM:
            response.decision.CopyFrom(convert.decision(make_decision(Reason.HARMFUL_REQUEST)))
        elif situation.emergency:
            decided = make_decision(Reason.EMERGENCY, detail=situation.describe())
            response.decision.CopyFrom(convert.decision(decided))
        elif reading.reason:
            decided = make_decision(reading.reason, detail=reading.detail)
            response.decision.CopyFrom(convert.decision(decided))
        elif not corpus.loaded:
            # Without a corpus no drug name can be resolved: say so rather than a misleading frame.
            response.decision.CopyFrom(convert.decision(make_decision(Reason.CORPUS_NOT_LOADED)))
        return response

