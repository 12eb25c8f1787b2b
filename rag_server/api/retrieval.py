"""RetrievalService: which evidence may be used. Blocking store work runs in asyncio.to_thread.

Unknown drug ids and an unloaded corpus are normal responses with a decision (DRUG_NOT_FOUND,
CORPUS_NOT_LOADED); malformed input is INVALID_ARGUMENT with BadRequest details; ListDrugs, which has no
decision field, answers FAILED_PRECONDITION while no corpus is served.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from rag_server.api import convert
from rag_server.api.errors import failed_precondition
from rag_server.api.interceptors import current_correlation_id
from rag_server.api.validation import Violations
from rag_server.app import App
from rag_server.gen.rag.v1 import retrieval_pb2, retrieval_pb2_grpc
from rag_server.persistence.traces import RetrievalTrace
from rag_server.retrieval.service import retriever_for
from rag_server.text import bm25

log = logging.getLogger("rag_server.api.retrieval")


class RetrievalServicer(retrieval_pb2_grpc.RetrievalServiceServicer):
    def __init__(self, app: App) -> None:
        self.app = app
        # Build the drug catalog of the served generation now rather than on the first request.
        threading.Thread(target=self._warm, name="catalog-warmup", daemon=True).start()

    def _warm(self) -> None:
        """Load what the first requests would otherwise pay for: the catalog, the word segmenter
        and the embedding model (a cold free-form request once tripped the reranker timeout)."""
        try:
            retriever_for(self.app).catalog()
            bm25.query_vector("khởi động tách từ")
            if self.app.embedder is not None:
                self.app.embedder.embed(["khởi động mô hình"], "query")
        except Exception:  # a failing store shows up on the first real request instead
            log.exception("retrieval warm-up failed")

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
        if not (request.query.strip() or request.drug_id or request.HasField("frame")):
            v.add("query", "give a query, a drug_id (with or without section_key) or a frame")
        v.check_query("query", request.query, required=False)
        v.check_drug_id("drug_id", request.drug_id)
        v.check_section_key("section_key", request.section_key, self.app.vocabulary)
        if request.HasField("frame"):
            f = request.frame
            v.check_query("frame.query", f.query, required=False)
            v.check_section_key("frame.section_key", f.section_key, self.app.vocabulary)
            v.check_query("frame.indication", f.indication, required=False)
            for i, drug_id in enumerate(f.drug_ids):
                v.check_drug_id(f"frame.drug_ids[{i}]", drug_id)
            if not (f.query.strip() or request.query.strip() or f.drug_ids or f.indication.strip()):
                v.add("frame", "a frame needs a query, drug_ids or an indication")
        v.raise_if_any()
        retriever = retriever_for(self.app)
        frame = convert.frame_from_proto(request.frame, request.query) if request.HasField("frame") else None
        result = await asyncio.to_thread(
            retriever.retrieve, request.query, request.drug_id, request.section_key, frame
        )
        reply = convert.retrieve_response(result)
        self._trace(RetrievalTrace.from_retrieve, request, reply, started)
        return reply

    async def LookupIndication(
        self, request: retrieval_pb2.LookupIndicationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.LookupIndicationResponse:
        started = time.perf_counter()
        v = Violations()
        v.check_query("indication", request.indication)
        v.raise_if_any()
        retriever = retriever_for(self.app)
        result = await asyncio.to_thread(retriever.lookup_indication, request.indication.strip())
        reply = convert.indication_response(result)
        self._trace(RetrievalTrace.from_lookup_indication, request, reply, started)
        return reply

    async def AssessPatient(
        self, request: retrieval_pb2.AssessPatientRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.AssessPatientResponse:
        started = time.perf_counter()
        v = Violations()
        limit = self.app.settings.patient_candidate_limit
        if not request.drug_ids:
            v.add("drug_ids", "name at least one already-indicated drug")
        elif len(request.drug_ids) > limit:
            v.add(
                "drug_ids",
                f"at most {limit} drugs per call (RAG_PATIENT_CANDIDATE_LIMIT); got {len(request.drug_ids)}",
            )
        for i, drug_id in enumerate(request.drug_ids):
            v.check_drug_id(f"drug_ids[{i}]", drug_id)
        if len(set(request.drug_ids)) != len(request.drug_ids):
            v.add("drug_ids", "must not repeat a drug")
        facts = convert.patient_from_proto(request.patient)
        if facts.empty:
            v.add("patient", "state at least one patient fact (medications, conditions, age, pregnancy, ...)")
        if request.patient.age_years < 0 or request.patient.age_years > 130:
            v.add("patient.age_years", "must be between 0 (not stated) and 130")
        v.raise_if_any()
        retriever = retriever_for(self.app)
        result = await asyncio.to_thread(retriever.assess_patient, list(request.drug_ids), facts)
        reply = convert.assessment_response(result)
        self._trace(RetrievalTrace.from_assess_patient, request, reply, started)
        return reply

    async def ListDrugs(
        self, request: retrieval_pb2.ListDrugsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> retrieval_pb2.ListDrugsResponse:
        retriever = retriever_for(self.app)
        drugs = await asyncio.to_thread(retriever.list_drugs)
        if drugs is None:
            raise failed_precondition("no corpus is loaded yet; ingest a formulary PDF first", "corpus")
        return convert.drug_list(drugs)
