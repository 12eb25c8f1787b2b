"""Traces: one row per Retrieve/LookupIndication/AssessPatient/Ask call. Saving is fail-open.

The servicers build a RetrievalTrace on every call; asyncpg (the `postgres` extra) is imported only by the
TraceStore that saves it, so a server without a database needs no PostgreSQL driver."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rag_server.call_context import current_otel_trace_id
from rag_server.gen.rag.v1 import answer_pb2, common_pb2, retrieval_pb2

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("rag_server.persistence")

_COLUMNS = (
    "trace_id, correlation_id, conversation_id, rpc, query, route, decision_kind, decision_reason, "
    "evidence_chunk_ids, omitted_chunk_ids, timings, corpus_generation, drug_ids, section_key, frame, "
    "citations, otel_trace_id"
)
_PLACEHOLDERS = ", ".join(f"${i}" for i in range(1, _COLUMNS.count(",") + 2))


def _enum_label(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower()


def _decision(decision: common_pb2.Decision) -> tuple[str, str]:
    return (
        _enum_label(common_pb2.DecisionKind, decision.kind, "DECISION_KIND_"),
        _enum_label(common_pb2.DecisionReason, decision.reason, "DECISION_REASON_"),
    )


def _timings(stages: Iterable[common_pb2.StageTiming]) -> dict[str, float]:
    """{stage: millis}; a stage that ran more than once is summed."""
    out: dict[str, float] = {}
    for t in stages:
        out[t.stage] = out.get(t.stage, 0.0) + t.millis
    return out


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


@dataclass(frozen=True)
class RetrievalTrace:
    correlation_id: str
    rpc: str
    route: str
    decision_kind: str
    decision_reason: str
    evidence_chunk_ids: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    query: str = ""
    conversation_id: str | None = None
    omitted_chunk_ids: list[str] = field(default_factory=list)
    corpus_generation: str = ""
    drug_ids: list[str] = field(default_factory=list)
    section_key: str = ""
    trace_id: uuid.UUID = field(default_factory=uuid.uuid4)
    created_at: datetime | None = None
    frame: dict[str, Any] | None = None  # Ask: what the turn was understood as (no patient facts)
    citations: list[dict[str, Any]] = field(default_factory=list)  # Ask: the cited chunks and pages
    otel_trace_id: str = ""  # the OpenTelemetry trace of the call (RAG_OTEL), "" when none was current

    @classmethod
    def from_retrieve(
        cls,
        request: retrieval_pb2.RetrieveRequest,
        response: retrieval_pb2.RetrieveResponse,
        correlation_id: str,
        corpus_generation: str = "",
    ) -> RetrievalTrace:
        kind, reason = _decision(response.decision)
        frame = request.frame
        return cls(
            correlation_id=correlation_id,
            rpc="RetrievalService/Retrieve",
            query=request.query or frame.query,
            drug_ids=[request.drug_id] if request.drug_id else list(frame.drug_ids),
            section_key=request.section_key or frame.section_key,
            route=_enum_label(retrieval_pb2.Route, response.route, "ROUTE_"),
            decision_kind=kind,
            decision_reason=reason,
            evidence_chunk_ids=[e.chunk_id for e in response.evidence],
            omitted_chunk_ids=list(response.omitted_evidence_ids),
            timings=_timings(response.timings),
            corpus_generation=corpus_generation,
            otel_trace_id=current_otel_trace_id(),
        )

    @classmethod
    def from_lookup_indication(
        cls,
        request: retrieval_pb2.LookupIndicationRequest,
        response: retrieval_pb2.LookupIndicationResponse,
        correlation_id: str,
        corpus_generation: str = "",
    ) -> RetrievalTrace:
        """route is the match stage ("keyword" | "dense"), "none" when nothing matched."""
        kind, reason = _decision(response.decision)
        return cls(
            correlation_id=correlation_id,
            rpc="RetrievalService/LookupIndication",
            query=request.indication,
            route=response.match_stage or "none",
            decision_kind=kind,
            decision_reason=reason,
            evidence_chunk_ids=_unique(e.chunk_id for c in response.candidates for e in c.evidence),
            timings=_timings(response.timings),
            corpus_generation=corpus_generation,
            otel_trace_id=current_otel_trace_id(),
        )

    @classmethod
    def from_assess_patient(
        cls,
        request: retrieval_pb2.AssessPatientRequest,
        response: retrieval_pb2.AssessPatientResponse,
        correlation_id: str,
        corpus_generation: str = "",
    ) -> RetrievalTrace:
        """The drugs assessed and the evidence found; the patient facts themselves are not stored."""
        kind, reason = _decision(response.decision)
        return cls(
            correlation_id=correlation_id,
            rpc="RetrievalService/AssessPatient",
            drug_ids=list(request.drug_ids),
            route="assess_patient",
            decision_kind=kind,
            decision_reason=reason,
            evidence_chunk_ids=_unique(
                e.chunk_id for a in response.assessments for f in a.facets for e in f.evidence
            ),
            timings=_timings(response.timings),
            corpus_generation=corpus_generation,
            otel_trace_id=current_otel_trace_id(),
        )

    def _row(self) -> tuple[Any, ...]:
        return (
            self.trace_id, self.correlation_id, self.conversation_id, self.rpc, self.query, self.route,
            self.decision_kind, self.decision_reason, list(self.evidence_chunk_ids),
            list(self.omitted_chunk_ids), dict(self.timings), self.corpus_generation,
            list(self.drug_ids), self.section_key, self.frame, list(self.citations), self.otel_trace_id,
        )

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> RetrievalTrace:
        return cls(
            trace_id=r["trace_id"], correlation_id=r["correlation_id"], conversation_id=r["conversation_id"],
            rpc=r["rpc"], query=r["query"], route=r["route"], decision_kind=r["decision_kind"],
            decision_reason=r["decision_reason"], evidence_chunk_ids=list(r["evidence_chunk_ids"]),
            omitted_chunk_ids=list(r["omitted_chunk_ids"]), timings=dict(r["timings"]),
            corpus_generation=r["corpus_generation"], drug_ids=list(r["drug_ids"]),
            section_key=r["section_key"], created_at=r["created_at"], frame=r["frame"],
            citations=list(r["citations"]), otel_trace_id=r["otel_trace_id"],
        )

    @classmethod
    def from_ask(
        cls,
        request: answer_pb2.AskRequest,
        final: answer_pb2.AskFinal,
        correlation_id: str,
        corpus_generation: str = "",
    ) -> RetrievalTrace:
        """One row per Ask: question, frame (drugs, section, turn type), route, decision, citations."""
        kind, reason = _decision(final.decision)
        f = final.frame
        return cls(
            correlation_id=correlation_id,
            rpc="AnswerService/Ask",
            query=request.query,
            conversation_id=request.conversation_id or None,
            drug_ids=list(f.drug_ids),
            section_key=f.section_key,
            route=_enum_label(retrieval_pb2.Route, final.route, "ROUTE_"),
            decision_kind=kind,
            decision_reason=reason,
            evidence_chunk_ids=[c.chunk_id for c in final.citations],
            timings=_timings(final.timings),
            corpus_generation=corpus_generation,
            trace_id=uuid.UUID(final.trace_id) if final.trace_id else uuid.uuid4(),
            frame={
                "turn_type": _enum_label(common_pb2.TurnType, f.turn_type, "TURN_TYPE_"),
                "drug_ids": list(f.drug_ids), "section_key": f.section_key, "indication": f.indication,
            } if final.HasField("frame") else None,
            citations=[
                {"chunk_id": c.chunk_id, "drug_id": c.drug_id, "section_key": c.section_key,
                 "printed_page": c.source.printed_page}
                for c in final.citations
            ],
            otel_trace_id=final.otel_trace_id or current_otel_trace_id(),
        )


class TraceStore:
    """Writes traces without ever failing the request that produced them."""

    def __init__(self, pool: asyncpg.Pool, *, timeout_s: float = 2.0) -> None:
        self.pool = pool
        self.timeout_s = timeout_s

    async def save(self, trace: RetrievalTrace) -> bool:
        """True when stored; False (logged) on any database failure or timeout."""
        import asyncpg

        sql = f"INSERT INTO retrieval_traces ({_COLUMNS}) VALUES ({_PLACEHOLDERS})"
        try:
            await asyncio.wait_for(self.pool.execute(sql, *trace._row()), self.timeout_s)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
            log.warning("trace %s not saved (fail-open): %s", trace.correlation_id, exc)
            return False
        return True

    async def by_correlation_id(self, correlation_id: str) -> list[RetrievalTrace]:
        rows = await self.pool.fetch(
            f"SELECT {_COLUMNS}, created_at FROM retrieval_traces"
            " WHERE correlation_id = $1 ORDER BY created_at",
            correlation_id,
        )
        return [RetrievalTrace.from_record(r) for r in rows]

    async def recent(self, limit: int = 50) -> list[RetrievalTrace]:
        rows = await self.pool.fetch(
            f"SELECT {_COLUMNS}, created_at FROM retrieval_traces ORDER BY created_at DESC LIMIT $1", limit
        )
        return [RetrievalTrace.from_record(r) for r in rows]
