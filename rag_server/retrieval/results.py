"""What the routes return (domain records; rag_server.api.convert maps them to protobuf)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from rag_server.domain import Decision, FactMatch, Hit, ScoreKind
from rag_server.providers.rerank.breaker import BreakerState
from rag_server.retrieval.timing import Timings
from rag_server.understanding.frame import QueryFrame


class Route(StrEnum):
    SECTION = "section"
    SECTION_POOLED = "section_pooled"
    DRUG_OVERVIEW = "drug_overview"
    FREE_FORM = "free_form"
    CORPUS_SEARCH = "corpus_search"
    NONE = "none"
    INDICATION = "indication"
    PATIENT = "patient"
    EFFECT = "effect"  # "does X cause Y": X's effect sections, read whole


@dataclass
class RetrievalResult:
    decision: Decision
    evidence: list[Hit] = field(default_factory=list)
    omitted_ids: list[str] = field(default_factory=list)
    route: Route = Route.NONE
    timings: Timings = field(default_factory=Timings)
    frame: QueryFrame | None = None
    reranker_state: BreakerState | None = None  # None unless the route used the reranker
    assessment: AssessmentResult | None = None  # the patient route's facets
    candidates: list[IndicationCandidate] = field(default_factory=list)  # the indication route's drugs
    read_sections: tuple[tuple[str, str], ...] = ()  # (drug_id, section_key) read whole (the effect route)


@dataclass
class IndicationCandidate:
    drug_id: str
    drug_name: str
    score: float
    score_kind: ScoreKind
    evidence: list[Hit]


class IndicationStage(StrEnum):
    """Which pass of the indication lookup produced the candidates."""

    KEYWORD = "keyword"
    SYNONYM = "synonym"
    DENSE = "dense"
    NONE = ""  # nothing matched


@dataclass
class IndicationResult:
    decision: Decision
    candidates: list[IndicationCandidate] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
    match_stage: IndicationStage = IndicationStage.NONE
    indication: str = ""


class Facet(StrEnum):
    INTERACTION = "interaction"
    WARNING = "warning"
    DOSAGE_CONTEXT = "dosage_context"
    PREGNANCY = "pregnancy"
    BREASTFEEDING = "breastfeeding"


class CandidateStatus(StrEnum):
    EVIDENCE_FOUND = "evidence_found"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"  # never read as "safe"
    VERIFY_PDF = "verify_pdf"


@dataclass
class FacetResult:
    facet: Facet
    status: CandidateStatus
    evidence: list[Hit]
    query: str
    matches: list[FactMatch] = field(default_factory=list)


@dataclass
class CandidateResult:
    drug_id: str
    drug_name: str
    facets: list[FacetResult]
    decision: Decision


@dataclass
class AssessmentResult:
    decision: Decision
    candidates: list[CandidateResult] = field(default_factory=list)
    timings: Timings = field(default_factory=Timings)
