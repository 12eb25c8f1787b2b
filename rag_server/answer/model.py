"""What the answer pipeline passes around and what it streams (domain types; api/convert_answer.py makes
the protobuf)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from rag_server.domain import Chunk, Decision, FactMatch, PageBox, SourceRef, TableView
from rag_server.retrieval.results import AssessmentResult, IndicationCandidate, Route
from rag_server.understanding.frame import QueryFrame


@dataclass(frozen=True)
class Support:
    """Where a claim's support lies inside one cited chunk: [start, end) in code points of its text, and
    where it is printed (rag_server.domain.boxes_for: the boxes of its lines; empty when not known)."""

    chunk_id: str
    start: int
    end: int
    physical_page: int = 0  # the page the span starts on (0: not known)
    boxes: tuple[PageBox, ...] = ()


@dataclass(frozen=True)
class Claim:
    """A verified statement: it passed grounding and entailment against the chunks it cites."""

    text: str
    source_ids: tuple[str, ...]
    support: tuple[Support, ...] = ()


@dataclass(frozen=True)
class Block:
    """A titled group of verified claims (one per section or topic), or a VERIFY_PDF notice."""

    title: str
    claims: tuple[Claim, ...] = ()
    section_key: str = ""
    drug_id: str = ""
    requires_visual_check: bool = False
    pages: tuple[SourceRef, ...] = ()
    note: str = ""  # service-written, never a claim
    table: TableView | None = None  # a table shown as its own block (rag_server.domain.table_view)


@dataclass(frozen=True)
class Citation:
    chunk_id: str
    drug_id: str
    drug_name: str
    section_key: str
    section_title: str
    pages: tuple[SourceRef, ...]


class Stage(StrEnum):
    UNDERSTOOD = "understood"
    EVIDENCE_RETRIEVED = "evidence_retrieved"
    GENERATING = "generating"
    VERIFYING = "verifying"


@dataclass(frozen=True)
class Progress:
    stage: Stage
    message: str = ""


@dataclass
class Final:
    """The last event of an Ask: the decision and everything a client shows with it."""

    decision: Decision
    citations: list[Citation] = field(default_factory=list)
    answer_text: str = ""
    frame: QueryFrame | None = None
    route: Route = Route.NONE
    quick_replies: list[str] = field(default_factory=list)
    candidates: list[IndicationCandidate] = field(default_factory=list)
    assessment: AssessmentResult | None = None
    disclaimer: str = ""
    trace_id: str = ""
    conversation_id: str = ""
    timings: list[tuple[str, float]] = field(default_factory=list)


AskEvent = Progress | Block | Final


class Plan(StrEnum):
    """How the evidence of a route is presented (the generator's instructions)."""

    WHOLE_SECTION = "whole_section"  # every part of the section, in part order, never truncated
    OVERVIEW = "overview"  # the intro sections
    MOST_RELEVANT = "most_relevant"  # free-form: the most relevant sentences within the budget
    INDICATION_LIST = "indication_list"  # the drugs whose Chỉ định names the condition (no ranking)
    PATIENT_FACETS = "patient_facets"  # per drug, per facet; where nothing was found, said plainly
    URGENT = "urgent"  # emergency: the overdose section as it stands
    EFFECT = "effect"  # "does X cause Y": the sentences of X's effect sections that name Y


@dataclass(frozen=True)
class EvidenceBlock:
    """One numbered evidence block a generator sees ([1], [2], ...). `title` names the answer block its
    claims go to (blocks with the same title form one); `focus` is what to look for in it (the condition
    of an indication lookup, the patient facts of a facet), `focus_forms` the words that carry it, and
    `facts` how each patient fact matched this chunk (AssessPatient's matcher)."""

    number: int
    chunk: Chunk
    title: str = ""
    focus: str = ""
    focus_forms: tuple[str, ...] = ()
    facts: tuple[FactMatch, ...] = ()


@dataclass(frozen=True)
class DraftClaim:
    """A generator's claim before verification: its text and the evidence block numbers it cites."""

    text: str
    sources: tuple[int, ...]


@dataclass(frozen=True)
class Draft:
    claims: tuple[DraftClaim, ...]
    evidence_sufficient: bool


@dataclass(frozen=True)
class GenerationRequest:
    question: str
    plan: Plan
    evidence: tuple[EvidenceBlock, ...]
    max_claims: int
    missing: tuple[int, ...] = ()  # a repair: evidence blocks the previous draft left out
    frame: QueryFrame | None = None  # the reading: asked terms, the effect asked about

    def asked_forms(self) -> tuple[str, ...]:
        """The forms a claim of a focused plan must carry: the effect's, else every asked term's."""
        frame = self.frame
        if frame is None:
            return ()
        if self.plan is Plan.EFFECT and frame.effect is not None:
            return frame.effect.forms
        return tuple(dict.fromkeys(f for t in frame.asked_terms for f in t.forms))

    def known_forms(self) -> tuple[str, ...]:
        """The forms of the asked terms that are vocabulary phrases (what the question is medically about)."""
        frame = self.frame
        if frame is None:
            return ()
        return tuple(dict.fromkeys(f for t in frame.asked_terms if t.known for f in t.forms))
