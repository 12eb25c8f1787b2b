"""decide(): the one evidence gate used by every route and by any caller pooling evidence.

Minimum evidence per score kind (`EvidenceRule`, applied first by `decide_with`): an EXACT item (the
section route, 1.0 by construction) always counts; an item found by search (LEXICAL, FUSED, RERANK,
DENSE) counts only when its text contains one of the question's terms (the medical terms of a question
naming no drug; the content words of a free-form question about a drug), and a DENSE one only at or above
the rule's floor. Scores of different kinds are never compared with each other. When search found items
but none counts -> ABSTAIN insufficient_retrieval_score.
Then: no evidence -> ABSTAIN parent_hydration_failed; any item without a source ref (or a ref without a
printed page) -> ABSTAIN missing_provenance; any item needing a visual check -> VERIFY_PDF with its
pages; else ANSWERABLE grounded_evidence_available.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rag_server.decision import R, make_decision
from rag_server.domain import Chunk, Hit, ScoreKind, SourceRef
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.text.match import Phrases, find_any, tokenize

EvidenceItem = Hit | Chunk | pb.Evidence


@dataclass(frozen=True)
class _Item:
    chunk_id: str
    refs: tuple[tuple[str, int, int], ...]
    visual: bool


def _view(item: EvidenceItem) -> _Item:
    if isinstance(item, Hit):
        item = item.chunk
    if isinstance(item, Chunk):
        refs: Sequence[SourceRef] = item.source_refs
        return _Item(
            item.chunk_id,
            tuple((r.document_id, r.physical_page, r.printed_page) for r in refs),
            item.requires_visual_check,
        )
    return _Item(
        item.chunk_id,
        tuple((r.document_id, r.physical_page, r.printed_page) for r in item.source_refs),
        item.requires_visual_check,
    )


@dataclass(frozen=True)
class EvidenceRule:
    """What a searched (not EXACT) item must have to count as evidence."""

    terms: Phrases = field(default_factory=Phrases)  # the item's text contains one (empty: no term rule)
    dense_floor: float = 0.0  # a DENSE item scores at least this
    loose: bool = False  # the question was typed without diacritics: terms match by their folding alone

    def admits(self, hit: Hit) -> bool:
        if hit.score_kind is ScoreKind.EXACT:
            return True
        if hit.score_kind is ScoreKind.DENSE and hit.score < self.dense_floor:
            return False
        if not self.terms:
            return True
        toks = tokenize(hit.chunk.text)
        if not self.loose:
            return bool(find_any(toks, self.terms))
        text = " " + " ".join(t.folded for t in toks if not t.is_punct) + " "
        return any(f" {' '.join(p.folded)} " in text for p in self.terms)


def decide_with(evidence: Sequence[Hit], rule: EvidenceRule) -> tuple[list[Hit], pb.Decision]:
    """(the items the rule admits, the decision on them)."""
    kept = [h for h in evidence if rule.admits(h)]
    if evidence and not kept:
        return [], make_decision(R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE)
    return kept, decide(kept)


def decide(evidence: Iterable[EvidenceItem]) -> pb.Decision:
    items = [_view(e) for e in evidence]
    if not items:
        return make_decision(R.DECISION_REASON_PARENT_HYDRATION_FAILED)
    missing = [i.chunk_id for i in items if not i.refs or any(printed <= 0 for _, _, printed in i.refs)]
    if missing:
        return make_decision(R.DECISION_REASON_MISSING_PROVENANCE, detail=", ".join(missing[:5]))
    visual = [i for i in items if i.visual]
    if visual:
        pages: dict[tuple[str, int, int], None] = {}
        for item in visual:
            for ref in item.refs:
                pages.setdefault(ref, None)
        return make_decision(
            R.DECISION_REASON_VISUAL_VERIFICATION_REQUIRED,
            pages=[pb.SourceRef(document_id=d, physical_page=p, printed_page=f) for d, p, f in pages],
        )
    return make_decision(R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE)
