"""Traces: one row per Retrieve/LookupIndication/AssessPatient/Ask call. Saving is fail-open.

A RetrievalTrace is a plain record of the call (strings, lists, a frame summary): the servicers make one on
every call from their reply (rag_server/api/traces.py converts the wire messages; nothing here knows the
protobuf contract). asyncpg (the `postgres` extra) is imported only by the TraceStore that saves it, so a
server without a database needs no PostgreSQL driver."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rag_server.call_context import current_otel_trace_id
from rag_server.domain import DecisionKind, Reason

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("rag_server.persistence")

_COLUMNS = (
    "trace_id, correlation_id, conversation_id, rpc, query, route, decision_kind, decision_reason, "
    "evidence_chunk_ids, omitted_chunk_ids, timings, corpus_generation, drug_ids, section_key, frame, "
    "citations, otel_trace_id"
)
_PLACEHOLDERS = ", ".join(f"${i}" for i in range(1, _COLUMNS.count(",") + 2))


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
    def of(cls, rpc: str, correlation_id: str, kind: DecisionKind, reason: Reason, route: str,
           **fields: Any) -> RetrievalTrace:
        """The trace of one call from its decision (labels: the enum names in lower case, "answerable",
        "grounded_evidence_available"), its route label and the other fields; the OpenTelemetry trace id is
        the current span's unless given."""
        otel = str(fields.pop("otel_trace_id", "") or current_otel_trace_id())
        return cls(correlation_id=correlation_id, rpc=rpc, route=route, decision_kind=kind.name.lower(),
                   decision_reason=reason.name.lower(), otel_trace_id=otel, **fields)

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
