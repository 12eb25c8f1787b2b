"""AnswerService: grounded answers streamed as verified blocks (answer/pipeline.py does the work; this
converts its events to rag.v1 at the edge)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from rag_server.answer.memory import ConversationNotOwned
from rag_server.answer.pipeline import AskPipeline
from rag_server.api import answer_convert, audit_hook, traces
from rag_server.api.validation import Violations
from rag_server.api.work import schedule
from rag_server.app import App
from rag_server.call_context import current_correlation_id, current_otel_trace_id
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc
from rag_server.observability.hooks import note_decision, note_question
from rag_server.request_errors import conversation_not_owned
from rag_server.security.auth import conversation_owner

log = logging.getLogger("rag_server.api.answer")


class AnswerServicer(answer_pb2_grpc.AnswerServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app

    async def Ask(
        self, request: answer_pb2.AskRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[answer_pb2.AskResponse]:
        note_question(request.query)  # kept out of logs (RAG_LOG_QUESTIONS)
        v = Violations()
        v.check_query("query", request.query)
        v.check_conversation_id("conversation_id", request.conversation_id)
        v.raise_if_any()
        parts = self.app.answers
        assert parts is not None, "the app was not started"
        pipeline = AskPipeline(
            self.app.corpus, self.app.providers, parts.understander, parts.generator, parts.judge,
            parts.memory, parts.config, schedule(context, self.app.executor),
        )
        correlation_id = current_correlation_id()
        owner = conversation_owner()  # another caller's conversation is refused before anything runs
        trail = audit_hook.AskTrail(self.app, request.query, request.conversation_id)  # audit record
        try:
            if request.conversation_id:
                await parts.memory.check_owner(request.conversation_id, owner)
            async for event in pipeline.ask(request.query.strip(), request.conversation_id,
                                            context.time_remaining(), owner=owner):
                trail.see(event)  # at the Final: the record is queued (never waits)
                reply = answer_convert.event(event, correlation_id)
                if reply.HasField("final"):
                    reply.final.otel_trace_id = current_otel_trace_id()  # "" unless RAG_OTEL
                    note_decision(reply.final.decision)  # counted by the metrics when the call ends
                    self._trace(request, reply.final, correlation_id)
                yield reply
        except ConversationNotOwned as exc:
            raise conversation_not_owned(exc.conversation_id) from None

    def _trace(self, request: answer_pb2.AskRequest, final: answer_pb2.AskFinal, correlation_id: str) -> None:
        """One trace row per Ask, in the background (when a database is configured); never raises."""
        recorder = self.app.traces
        if recorder is None:
            return
        try:
            recorder.record(traces.ask_trace(request, final, correlation_id))
        except Exception:
            log.exception("ask trace not recorded (fail-open)")
