"""decide(): the one evidence gate used by every route and by any caller pooling evidence.

no evidence -> ABSTAIN parent_hydration_failed; any item without a source ref (or a ref without a
printed page) -> ABSTAIN missing_provenance; any item needing a visual check -> VERIFY_PDF with its
pages; else ANSWERABLE grounded_evidence_available.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_server.decision import R, make_decision
from rag_server.domain import Chunk, Hit, SourceRef
from rag_server.gen.rag.v1 import common_pb2 as pb

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
