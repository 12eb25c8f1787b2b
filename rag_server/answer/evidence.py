"""From a frame to the evidence an answer may use: the route's retrieval, numbered evidence blocks, the
presentation plan, and the notices the service writes itself (VERIFY_PDF pages, facets with nothing
found). Blocking (store work): the pipeline runs it on the worker pool."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.answer.model import Block, EvidenceBlock, Plan
from rag_server.domain import Chunk, Decision, Hit, SourceRef
from rag_server.retrieval.results import (
    AssessmentResult,
    CandidateStatus,
    Facet,
    IndicationCandidate,
    Route,
)
from rag_server.understanding.frame import QueryFrame, TurnType

if TYPE_CHECKING:
    from rag_server.retrieval.retriever import Retriever

OVERDOSE_SECTION = "qua_lieu_va_xu_tri"
FACET_TITLES = {
    Facet.INTERACTION: "Tương tác với thuốc đang dùng",
    Facet.WARNING: "Chống chỉ định và thận trọng",
    Facet.DOSAGE_CONTEXT: "Liều theo đối tượng",
    Facet.PREGNANCY: "Thời kỳ mang thai",
    Facet.BREASTFEEDING: "Thời kỳ cho con bú",
}
_PLANS = {
    Route.SECTION: Plan.WHOLE_SECTION,
    Route.SECTION_POOLED: Plan.WHOLE_SECTION,
    Route.DRUG_OVERVIEW: Plan.OVERVIEW,
    Route.FREE_FORM: Plan.MOST_RELEVANT,
    Route.CORPUS_SEARCH: Plan.MOST_RELEVANT,
    Route.INDICATION: Plan.INDICATION_LIST,
    Route.PATIENT: Plan.PATIENT_FACETS,
}


@dataclass
class Gathered:
    decision: Decision
    route: Route
    plan: Plan = Plan.WHOLE_SECTION
    evidence: tuple[EvidenceBlock, ...] = ()
    notices: list[Block] = field(default_factory=list)
    candidates: list[IndicationCandidate] = field(default_factory=list)
    assessment: AssessmentResult | None = None


def title_of(chunk: Chunk) -> str:
    return f"{chunk.drug_name}: {chunk.section_title}"


def pages_text(refs: tuple[SourceRef, ...] | list[SourceRef]) -> str:
    printed = sorted({r.printed_page for r in refs if r.printed_page > 0})
    return ", ".join(str(p) for p in printed) or ", ".join(str(r.physical_page) for r in refs)


def visual_notices(blocks: tuple[EvidenceBlock, ...]) -> list[Block]:
    """One VERIFY_PDF notice per answer block title, with the pages of all its visual chunks."""
    pages: dict[str, dict[SourceRef, None]] = {}
    first: dict[str, Chunk] = {}
    for b in blocks:
        if b.chunk.requires_visual_check:
            pages.setdefault(b.title, {}).update(dict.fromkeys(b.chunk.source_refs))
            first.setdefault(b.title, b.chunk)
    out: list[Block] = []
    for title, refs in pages.items():
        chunk = first[title]
        note = ("Nội dung dạng bảng hoặc công thức, không được diễn giải lại: đọc trực tiếp trên trang "
                f"{pages_text(list(refs))} của Dược thư.")
        out.append(Block(title, section_key=chunk.section_key, drug_id=chunk.drug_id,
                         requires_visual_check=True, pages=tuple(refs), note=note))
    return out


def number(hits: list[tuple[Hit, str, str]]) -> tuple[EvidenceBlock, ...]:
    """Evidence blocks numbered from 1, each chunk once, in the order given."""
    seen: dict[str, EvidenceBlock] = {}
    for hit, title, focus in hits:
        if hit.chunk.chunk_id not in seen:
            seen[hit.chunk.chunk_id] = EvidenceBlock(len(seen) + 1, hit.chunk, title, focus)
    return tuple(seen.values())


def _with_notices(gathered: Gathered) -> Gathered:
    gathered.notices += visual_notices(gathered.evidence)
    return gathered


def gather(r: Retriever, frame: QueryFrame) -> Gathered:
    if frame.turn_type == TurnType.INDICATION_LOOKUP and frame.indication:
        looked = r.lookup_indication(frame.indication)
        hits = [(h, f"{c.drug_name}: Chỉ định", frame.indication)
                for c in looked.candidates for h in c.evidence]
        return _with_notices(Gathered(looked.decision, Route.INDICATION, Plan.INDICATION_LIST, number(hits),
                                      candidates=list(looked.candidates)))
    if frame.turn_type == TurnType.PATIENT_ASSESSMENT and frame.drug_ids:
        return _patient(r, frame)
    result = r.retrieve(frame=frame)
    plan = _PLANS.get(result.route, Plan.MOST_RELEVANT)
    hits = [(h, title_of(h.chunk), "") for h in result.evidence]
    return _with_notices(Gathered(result.decision, result.route, plan, number(hits)))


def _patient(r: Retriever, frame: QueryFrame) -> Gathered:
    assessed = r.assess_patient(frame.drug_ids, frame.patient)
    hits: list[tuple[Hit, str, str]] = []
    notices: list[Block] = []
    for candidate in assessed.candidates:
        for facet in candidate.facets:
            title = f"{candidate.drug_name}: {FACET_TITLES[facet.facet]}"
            if facet.status is CandidateStatus.INSUFFICIENT_EVIDENCE or not facet.evidence:
                note = (f"Không tìm thấy thông tin về «{facet.query}» trong Dược thư cho "
                        f"{candidate.drug_name}; điều này không có nghĩa là an toàn.")
                notices.append(Block(title, drug_id=candidate.drug_id, note=note))
                continue
            hits += [(h, title, facet.query) for h in facet.evidence]
    gathered = Gathered(assessed.decision, Route.PATIENT, Plan.PATIENT_FACETS, number(hits), notices,
                        assessment=assessed)
    return _with_notices(gathered)


def urgent(r: Retriever, drug_ids: list[str]) -> Gathered | None:
    """The overdose section of each named drug (an emergency's evidence), None when none has one."""
    hits: list[tuple[Hit, str, str]] = []
    decision: Decision | None = None
    for drug_id in drug_ids:
        result = r.retrieve(drug_id=drug_id, section_key=OVERDOSE_SECTION)
        if result.decision.usable:
            decision = decision or result.decision
            hits += [(h, title_of(h.chunk), "") for h in result.evidence]
    if decision is None or not hits:
        return None
    return _with_notices(Gathered(decision, Route.SECTION, Plan.URGENT, number(hits)))
