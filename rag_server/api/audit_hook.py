"""The audit record of a Retrieve or an Ask call, handed from the servicer to the background writer
(persistence/audit.py builds the entry from domain values, persistence/audit_store.py appends it). Adds
what only the call knows: the caller's key name and the correlation id. Never raises and never waits:
a record that cannot be built is logged at ERROR and counted.

A Retrieve reply served from the reply cache has no domain result: its frame, decision, route and evidence
are read back from that reply here, at the edge (the same values the result it was built from had), once
per generation and request (the reply cache's own key), so a hot cached reply pays a dictionary lookup.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rag_server.answer.model import AskEvent, Block, Claim, Final
from rag_server.api import convert
from rag_server.app import App
from rag_server.call_context import caller_name, current_correlation_id
from rag_server.domain import Decision, DecisionKind, Reason
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.persistence.audit import build_entry, frame_entry
from rag_server.retrieval.caches import Lru
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.understanding.catalog import MatchStage, Mention
from rag_server.understanding.frame import QueryFrame

RETRIEVE = "RetrievalService/Retrieve"
ASK = "AnswerService/Ask"

_KIND_STAGE = {
    pb.MATCH_KIND_EXACT: MatchStage.EXACT,
    pb.MATCH_KIND_TYPO: MatchStage.FUZZY,
    pb.MATCH_KIND_PREFIX: MatchStage.PREFIX,
}


class _Act(NamedTuple):
    """What a Retrieve reply says the call did."""

    frame: dict[str, Any] | None
    decision: Decision
    route: str
    evidence: list[str]


# The act of each cached reply, by (generation, query, drug_id, section_key): the reply cache's key.
_CACHED_ACTS: Lru[tuple[str, str, str, str], _Act] = Lru(4096)


def _frame_of(reply: rpb.RetrieveResponse) -> QueryFrame | None:
    if not reply.HasField("frame"):
        return None
    frame = convert.frame_from_proto(reply.frame)
    return frame.but(drug_mentions=tuple(
        Mention(0, 0, m.text, tuple(m.drug_ids), m.distance,
                stage=_KIND_STAGE.get(m.match_kind, MatchStage.EXACT))
        for m in reply.frame.drug_mentions
    ))


def _act_of(reply: rpb.RetrieveResponse) -> _Act:
    return _Act(
        frame_entry(_frame_of(reply)),
        Decision(DecisionKind(reply.decision.kind), Reason(reply.decision.reason), ""),
        Route[rpb.Route.Name(reply.route).removeprefix("ROUTE_")].value,
        [e.chunk_id for e in reply.evidence],
    )


def _manifest(app: App) -> Any:
    return app.corpus.manifest


def retrieve(
    app: App, request: rpb.RetrieveRequest, result: RetrievalResult | None, reply: rpb.RetrieveResponse,
    manifest: Any,
) -> None:
    """Audit one Retrieve call: `result` is the domain result, None when `reply` came from the cache."""
    writer = app.audit
    if writer is None:
        return
    correlation_id = current_correlation_id()
    try:
        generation = str(getattr(manifest, "generation", ""))
        key = (generation, request.query, request.drug_id, request.section_key)
        if result is not None:
            made = _Act(frame_entry(result.frame), result.decision, str(result.route.value),
                        [h.chunk.chunk_id for h in result.evidence])
            act = _CACHED_ACTS.get_or_make(key, lambda: made) if not request.HasField("frame") else made
        else:  # the act the uncached call recorded (the reply read back only when it is gone)
            act = _CACHED_ACTS.get_or_make(key, lambda: _act_of(reply))
        writer.record(build_entry(
            rpc=RETRIEVE, question=request.query or request.frame.query, frame=act.frame,
            decision=act.decision, evidence_chunk_ids=act.evidence, manifest=manifest,
            providers=writer.providers.retrieval, caller=caller_name(), correlation_id=correlation_id,
            question_mode=writer.question_mode, route=act.route,
        ))
    except Exception:
        writer.build_failed(RETRIEVE, correlation_id)


class AskTrail:
    """Follows one Ask's events: keeps the verified claims of its blocks and, at its Final, records the
    call. `see` never raises."""

    def __init__(self, app: App, question: str, conversation_id: str = "") -> None:
        self.writer = app.audit
        self.question = question
        self.conversation_id = conversation_id
        self.correlation_id = current_correlation_id()
        self.caller = caller_name()
        self.claims: list[Claim] = []
        self.manifest: Any = None
        if self.writer is not None:
            try:
                self.manifest = _manifest(app)
            except Exception:
                self.manifest = None

    def see(self, event: AskEvent) -> None:
        writer = self.writer
        if writer is None:
            return
        try:
            if isinstance(event, Block):
                self.claims.extend(event.claims)
            elif isinstance(event, Final):
                writer.record(build_entry(
                    rpc=ASK, question=self.question, frame=event.frame, decision=event.decision,
                    evidence_chunk_ids=[c.chunk_id for c in event.citations], manifest=self.manifest,
                    providers=writer.providers.ask, caller=self.caller, correlation_id=self.correlation_id,
                    question_mode=writer.question_mode, claims=self.claims, route=str(event.route.value),
                    conversation_id=self.conversation_id,
                ))
        except Exception:
            writer.build_failed(ASK, self.correlation_id)
