"""RetrievalService: which evidence may be used. Blocking store work runs on the worker pool with the
call's budget (api/work.py): a cancelled call or an expired deadline stops it between stages.

Unknown drug ids and an unloaded corpus are normal responses with a decision (DRUG_NOT_FOUND,
CORPUS_NOT_LOADED); malformed input is INVALID_ARGUMENT with BadRequest details naming each field and its
limit (api/limits.py); ListDrugs, which has no decision field, answers FAILED_PRECONDITION while no corpus
is served.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

import grpc

from rag_server.api import audit_hook, convert, traces
from rag_server.api import limits as L
from rag_server.api.replies import ReplyCache
from rag_server.api.validation import Violations
from rag_server.api.work import run
from rag_server.app import App
from rag_server.call_context import current_correlation_id
from rag_server.domain import Reason
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.gen.rag.v1 import retrieval_pb2, retrieval_pb2_grpc
from rag_server.observability.hooks import note_decision, note_question, patient_texts
from rag_server.persistence.traces import RetrievalTrace
from rag_server.request_errors import failed_precondition, invalid_argument
from rag_server.retrieval import requests
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.routes import retrieve
from rag_server.understanding.frame import Reading
from rag_server.understanding.reading import conflicting_drugs

log = logging.getLogger("rag_server.api.retrieval")

# What a caller's frame must carry for its turn type.
_FRAME_NEEDS = {
    pb.TURN_TYPE_SECTION_QUESTION: ("section_key", "drug_ids"),
    pb.TURN_TYPE_DRUG_OVERVIEW: ("drug_ids",),
    pb.TURN_TYPE_PATIENT_ASSESSMENT: ("drug_ids", "patient"),
    pb.TURN_TYPE_INDICATION_LOOKUP: ("indication",),
}


def check_frame(v: Violations, f: pb.QueryFrame, query: str, app: App) -> None:
    """A caller's frame: known enum value, bounded fields, and what its turn type needs."""
    if f.turn_type not in pb.TurnType.values():
        v.add("frame.turn_type", f"unknown TurnType value {int(f.turn_type)}")
        return
    v.check_query("frame.query", f.query, required=False)
    v.check_section_key("frame.section_key", f.section_key, app.vocabulary)
    v.check_indication("frame.indication", f.indication, required=False)
    v.check_drug_ids("frame.drug_ids", list(f.drug_ids), L.FRAME_DRUG_IDS)
    v.check_patient("frame.patient", f.patient)
    fields = list(f.missing_fields)
    if len(fields) > L.MISSING_FIELDS or any(len(m) > L.MISSING_FIELD_CHARS for m in fields):
        v.add("frame.missing_fields", f"at most {L.MISSING_FIELDS} items of {L.MISSING_FIELD_CHARS} chars")
    facts = convert.patient_from_proto(f.patient)
    for need in _FRAME_NEEDS.get(f.turn_type, ()):
        missing = (
            (need == "section_key" and not f.section_key)
            or (need == "drug_ids" and not f.drug_ids)
            or (need == "indication" and not f.indication.strip())
            or (need == "patient" and facts.empty)
        )
        if missing:
            v.add(f"frame.{need}", f"a {pb.TurnType.Name(f.turn_type)} frame needs {need}")
    if not (f.query.strip() or query.strip() or f.drug_ids or f.indication.strip()):
        v.add("frame", "a frame needs a query, drug_ids or an indication")


# Routes whose reply depends only on the request and the generation (no provider that may fail).
_STABLE_ROUTES = frozenset(
    {Route.SECTION, Route.SECTION_POOLED, Route.DRUG_OVERVIEW, Route.EFFECT, Route.NONE}
)


class RetrievalServicer(retrieval_pb2_grpc.RetrievalServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app
        self.replies = ReplyCache(app.settings.reply_cache_size)

    def _trace(
        self, build: Callable[[Any, Any, str], RetrievalTrace], request: Any, reply: Any, started: float
    ) -> None:
        """Record one trace in the background (when a database is configured); never raises."""
        recorder = self.app.traces
        if recorder is None:
            return
        try:
            trace = build(request, reply, current_correlation_id())
            total = round((time.perf_counter() - started) * 1000, 3)
            recorder.record(dataclasses.replace(trace, timings={**trace.timings, "total": total}))
        except Exception:
            log.exception("retrieval trace not recorded (fail-open)")

    async def Retrieve(
        self, request: retrieval_pb2.RetrieveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.RetrieveResponse:
        started = time.perf_counter()
        v = Violations()
        has_frame = request.HasField("frame")
        if has_frame:
            f = request.frame
            note_question(request.query, f.query, f.indication, *patient_texts(f.patient))  # kept out of logs
        else:
            note_question(request.query)  # kept out of logs (RAG_LOG_QUESTIONS)
        if not (request.query.strip() or request.drug_id or has_frame):
            v.add("query", "give a query, a drug_id (with or without section_key) or a frame")
        v.check_query("query", request.query, required=False)
        v.check_drug_id("drug_id", request.drug_id)
        v.check_section_key("section_key", request.section_key, self.app.vocabulary)
        if request.section_key and not request.drug_id and not request.query.strip():
            v.add("section_key", "a section_key needs a drug_id or a query naming the drug")
        if has_frame:
            if request.drug_id or request.section_key:
                v.add("frame", "give either drug_id/section_key or a frame, not both")
            check_frame(v, request.frame, request.query, self.app)
        v.raise_if_any()
        corpus, providers, executor = self.app.corpus, self.app.providers, self.app.executor
        cheap = len(request.query) + len(request.frame.query) <= self.app.settings.inline_query_chars
        key = None if has_frame else ("retrieve", request.query, request.drug_id, request.section_key)
        reply = self.replies.get(corpus.generation, key, retrieval_pb2.RetrieveResponse) if key else None
        result: RetrievalResult | None = None  # None: the reply came from the cache
        if reply is None:
            began = time.perf_counter()
            if has_frame:
                reading = Reading(convert.frame_from_proto(request.frame, request.query))
            else:
                reading = await run(
                    context,
                    executor,
                    requests.read_request,
                    request.query,
                    request.drug_id,
                    request.section_key,
                    corpus,
                    try_inline=cheap,
                )
                others = (
                    conflicting_drugs(reading.frame, request.drug_id, corpus.catalog)
                    if request.drug_id
                    else []
                )
                if others:
                    raise invalid_argument(
                        "the query names another drug than drug_id",
                        (
                            "query",
                            f"names {L.echo(', '.join(others))}, but drug_id is '{request.drug_id}'; "
                            "send one drug, or drop drug_id to let the query decide",
                        ),
                    )
            read_ms = (time.perf_counter() - began) * 1000
            result = await run(context, executor, retrieve, reading, corpus, providers, try_inline=cheap)
            result = requests.with_reading_time(result, read_ms)
            reply = convert.retrieve_response(result)
            if key and result.route in _STABLE_ROUTES and result.decision.reason != Reason.CORPUS_NOT_LOADED:
                self.replies.put(corpus.generation, key, reply)
        note_decision(reply.decision)  # counted by the metrics when the call ends
        self._trace(traces.retrieve_trace, request, reply, started)
        audit_hook.retrieve(self.app, request, result, reply, corpus.manifest)  # queued, never waits
        return reply

    async def LookupIndication(
        self, request: retrieval_pb2.LookupIndicationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.LookupIndicationResponse:
        started = time.perf_counter()
        note_question(request.indication)  # kept out of logs (RAG_LOG_QUESTIONS)
        v = Violations()
        v.check_indication("indication", request.indication)
        v.raise_if_any()
        corpus = self.app.corpus
        text = request.indication.strip()
        key = ("indication", text)
        reply = self.replies.get(corpus.generation, key, retrieval_pb2.LookupIndicationResponse)
        if reply is None:
            result = await run(
                context, self.app.executor, requests.lookup_indication, text, corpus, self.app.providers
            )
            reply = convert.indication_response(result)
            if result.decision.reason != Reason.CORPUS_NOT_LOADED:
                self.replies.put(corpus.generation, key, reply)
        note_decision(reply.decision)
        self._trace(traces.lookup_indication_trace, request, reply, started)
        return reply

    async def AssessPatient(
        self, request: retrieval_pb2.AssessPatientRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.AssessPatientResponse:
        started = time.perf_counter()
        note_question(*patient_texts(request.patient))  # kept out of logs (RAG_LOG_QUESTIONS)
        v = Violations()
        limit = self.app.settings.patient_candidate_limit
        if not request.drug_ids:
            v.add("drug_ids", "name at least one already-indicated drug")
        v.check_drug_ids("drug_ids", list(request.drug_ids), limit)
        v.check_patient("patient", request.patient)
        facts = convert.patient_from_proto(request.patient)
        if facts.empty:
            v.add("patient", "state at least one patient fact (medications, conditions, age, pregnancy, ...)")
        v.raise_if_any()
        result = await run(
            context,
            self.app.executor,
            requests.assess_patient,
            list(request.drug_ids),
            facts,
            self.app.corpus,
            self.app.providers,
        )
        reply = convert.assessment_response(result)
        note_decision(reply.decision)
        self._trace(traces.assess_patient_trace, request, reply, started)
        return reply

    async def ListDrugs(
        self, request: retrieval_pb2.ListDrugsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.ListDrugsResponse:
        drugs = requests.list_drugs(self.app.corpus)
        if drugs is None:
            raise failed_precondition("no corpus is loaded yet; ingest a formulary PDF first", "corpus")
        return convert.drug_list(drugs)
