"""decide(): the one evidence gate used by every route and by any caller pooling evidence.

Minimum evidence per score kind (`EvidenceRule`, applied first by `decide_with`): an EXACT item (the
section route, 1.0 by construction) always counts; an item found by search (LEXICAL, FUSED, RERANK,
DENSE) counts only when its text carries one of the question's asked terms as whole words (text.carry: the
medical terms of a question naming no drug; every asked term of a free-form question about a drug), and a
DENSE one only at or above the rule's floor. Scores of different kinds are never compared with each
other. When search found items
but none counts -> ABSTAIN insufficient_retrieval_score.
Then: no evidence -> ABSTAIN parent_hydration_failed; any item without a source ref (or a ref without a
printed page) -> ABSTAIN missing_provenance; any item needing a visual check -> VERIFY_PDF with its
pages; else ANSWERABLE grounded_evidence_available.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_server.domain import Chunk, Decision, Hit, Reason, ScoreKind
from rag_server.reasons import make_decision
from rag_server.text.carry import carries

EvidenceItem = Hit | Chunk


@dataclass(frozen=True)
class EvidenceRule:
    """What a searched (not EXACT) item must have to count as evidence."""

    terms: tuple[str, ...] = ()  # the item's text carries one (empty: no term rule)
    dense_floor: float = 0.0  # a DENSE item scores at least this

    def admits(self, hit: Hit) -> bool:
        if hit.score_kind is ScoreKind.EXACT:
            return True
        if hit.score_kind is ScoreKind.DENSE and hit.score < self.dense_floor:
            return False
        return not self.terms or carries(hit.chunk.text, self.terms)


def decide_with(evidence: Sequence[Hit], rule: EvidenceRule) -> tuple[list[Hit], Decision]:
    """(the items the rule admits, the decision on them)."""
    kept = [h for h in evidence if rule.admits(h)]
    if evidence and not kept:
        return [], make_decision(Reason.INSUFFICIENT_RETRIEVAL_SCORE)
    return kept, decide(kept)


def decide(evidence: Iterable[EvidenceItem]) -> Decision:
    chunks = [e.chunk if isinstance(e, Hit) else e for e in evidence]
    if not chunks:
        return make_decision(Reason.PARENT_HYDRATION_FAILED)
    missing = [
        c.chunk_id for c in chunks if not c.source_refs or any(r.printed_page <= 0 for r in c.source_refs)
    ]
    if missing:
        return make_decision(Reason.MISSING_PROVENANCE, detail=", ".join(missing[:5]))
    visual = [c for c in chunks if c.requires_visual_check]
    if visual:
        pages = dict.fromkeys(ref for c in visual for ref in c.source_refs)
        return make_decision(Reason.VISUAL_VERIFICATION_REQUIRED, pages=list(pages))
    return make_decision(Reason.GROUNDED_EVIDENCE_AVAILABLE)
