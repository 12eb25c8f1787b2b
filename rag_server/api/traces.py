"""The trace row of each call, made from its wire request and reply (persistence/traces.py never sees the
protobuf contract): decision values become the domain enums, routes and turn types their labels."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from rag_server.domain import DecisionKind, Reason
from rag_server.gen.rag.v1 import answer_pb2, common_pb2, retrieval_pb2
from rag_server.persistence.traces import RetrievalTrace


def _label(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower()


def _decision(decision: common_pb2.Decision) -> tuple[DecisionKind, Reason]:
    return DecisionKind(decision.kind), Reason(decision.reason)


def _timings(stages: Iterable[common_pb2.StageTiming]) -> dict[str, float]:
    """{stage: millis}; a stage that ran more than once is summed."""
    out: dict[str, float] = {}
    for t in stages:
        out[t.stage] = out.get(t.stage, 0.0) + t.millis
    return out


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def retrieve_trace(
    request: retrieval_pb2.RetrieveRequest,
    response: retrieval_pb2.RetrieveResponse,
    correlation_id: str,
    corpus_generation: str = "",
) -> RetrievalTrace:
    frame = request.frame
    return RetrievalTrace.of(
        "RetrievalService/Retrieve", correlation_id, *_decision(response.decision),
        route=_label(retrieval_pb2.Route, response.route, "ROUTE_"),
        query=request.query or frame.query,
        drug_ids=[request.drug_id] if request.drug_id else list(frame.drug_ids),
        section_key=request.section_key or frame.section_key,
        evidence_chunk_ids=[e.chunk_id for e in response.evidence],
        omitted_chunk_ids=list(response.omitted_evidence_ids),
        timings=_timings(response.timings),
        corpus_generation=corpus_generation,
    )


def lookup_indication_trace(
    request: retrieval_pb2.LookupIndicationRequest,
    response: retrieval_pb2.LookupIndicationResponse,
    correlation_id: str,
    corpus_generation: str = "",
) -> RetrievalTrace:
    """route is the match stage ("keyword" | "dense"), "none" when nothing matched."""
    return RetrievalTrace.of(
        "RetrievalService/LookupIndication", correlation_id, *_decision(response.decision),
        route=response.match_stage or "none",
        query=request.indication,
        evidence_chunk_ids=_unique(e.chunk_id for c in response.candidates for e in c.evidence),
        timings=_timings(response.timings),
        corpus_generation=corpus_generation,
    )


def assess_patient_trace(
    request: retrieval_pb2.AssessPatientRequest,
    response: retrieval_pb2.AssessPatientResponse,
    correlation_id: str,
    corpus_generation: str = "",
) -> RetrievalTrace:
    """The drugs assessed and the evidence found; the patient facts themselves are not stored."""
    return RetrievalTrace.of(
        "RetrievalService/AssessPatient", correlation_id, *_decision(response.decision),
        route="assess_patient",
        drug_ids=list(request.drug_ids),
        evidence_chunk_ids=_unique(
            e.chunk_id for a in response.assessments for f in a.facets for e in f.evidence
        ),
        timings=_timings(response.timings),
        corpus_generation=corpus_generation,
    )


def ask_trace(
    request: answer_pb2.AskRequest,
    final: answer_pb2.AskFinal,
    correlation_id: str,
    corpus_generation: str = "",
) -> RetrievalTrace:
    """One row per Ask: question, frame (drugs, section, turn type), route, decision, citations."""
    f = final.frame
    return RetrievalTrace.of(
        "AnswerService/Ask", correlation_id, *_decision(final.decision),
        route=_label(retrieval_pb2.Route, final.route, "ROUTE_"),
        query=request.query,
        conversation_id=request.conversation_id or None,
        drug_ids=list(f.drug_ids),
        section_key=f.section_key,
        evidence_chunk_ids=[c.chunk_id for c in final.citations],
        timings=_timings(final.timings),
        corpus_generation=corpus_generation,
        trace_id=uuid.UUID(final.trace_id) if final.trace_id else uuid.uuid4(),
        frame={
            "turn_type": _label(common_pb2.TurnType, f.turn_type, "TURN_TYPE_"),
            "drug_ids": list(f.drug_ids), "section_key": f.section_key, "indication": f.indication,
        } if final.HasField("frame") else None,
        citations=[
            {"chunk_id": c.chunk_id, "drug_id": c.drug_id, "section_key": c.section_key,
             "printed_page": c.source.printed_page}
            for c in final.citations
        ],
        otel_trace_id=final.otel_trace_id,
    )
