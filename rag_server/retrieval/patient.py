"""Patient-specific safety evidence for already-indicated drugs (seed 000 §6). Never creates candidates.

Each facet is its own relation-specific lexical lookup over the drug's own sections (a scroll, then
word-boundary phrase matching):
  interaction     current medicines -> tuong_tac_thuoc; a chunk counts for a medicine only when THAT
                  medicine's name (title, INN or brand) occurs in it
  warning         conditions / allergies / age -> chong_chi_dinh, than_trong; needs a clinical anchor
  dosage context  renal / hepatic / age -> lieu_luong_va_cach_dung; needs a clinical anchor
  pregnancy, breastfeeding -> the section route (whole section)
Per section and per patient fact at most safety_hits_per_section chunks; at most
safety_sections_per_candidate lexical sections per drug. No hit -> INSUFFICIENT_EVIDENCE, never "safe".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_server.decision import K, R, make_decision
from rag_server.domain import Chunk, Hit, ScoreKind
from rag_server.retrieval.decide import decide
from rag_server.retrieval.lexical import anchor_matches
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import CandidateResult, CandidateStatus, Facet, FacetResult
from rag_server.retrieval.section import section_hits
from rag_server.store.base import ChunkFilter, Store
from rag_server.understanding.catalog import Catalog
from rag_server.understanding.patient import FactAnchors, PatientFacts, dosage_anchors, warning_anchors
from rag_server.understanding.rules import Rules
from rag_server.understanding.textmatch import phrase, tokenize
from rag_server.vocabulary import Vocabulary

INTERACTION_SECTIONS = ("tuong_tac_thuoc",)
WARNING_SECTIONS = ("chong_chi_dinh", "than_trong")
DOSAGE_SECTIONS = ("lieu_luong_va_cach_dung",)
PREGNANCY_SECTION = "thoi_ky_mang_thai"
BREASTFEEDING_SECTION = "thoi_ky_cho_con_bu"


@dataclass
class _SectionBudget:
    limit: int
    used: list[str]

    def admit(self, section_key: str) -> bool:
        if section_key in self.used:
            return True
        if len(self.used) >= self.limit:
            return False
        self.used.append(section_key)
        return True


def medication_anchors(catalog: Catalog, medications: Sequence[str]) -> list[FactAnchors]:
    out: list[FactAnchors] = []
    for med in medications:
        if med in catalog.drugs:
            names = tuple(dict.fromkeys(catalog.names_of(med)))
            out.append(FactAnchors(catalog.display_name(med), names))
        else:
            out.append(FactAnchors(med, (phrase(med),)))
    return out


def lexical_facet(
    chunks: Sequence[Chunk],
    sections: Sequence[str],
    facts: Sequence[FactAnchors],
    policy: EvidencePolicy,
    budget: _SectionBudget,
) -> list[Hit]:
    """For each fact and section: the chunks with the most distinct anchors (>= 1), best first."""
    prepared = [(c, tokenize(c.text)) for c in chunks if c.section_key in sections]
    picked: dict[str, Hit] = {}
    for fact in facts:
        for section_key in sections:
            scored = []
            for chunk, toks in prepared:
                if chunk.section_key != section_key:
                    continue
                matched = anchor_matches(toks, fact.anchors)
                if matched:
                    scored.append((len({m.folded for m in matched}), chunk))
            scored.sort(key=lambda s: (-s[0], s[1].part_index, s[1].chunk_id))
            for score, chunk in scored[: policy.safety_hits_per_section]:
                if not budget.admit(section_key):
                    break
                prior = picked.get(chunk.chunk_id)
                total = score + (prior.score if prior else 0.0)
                picked[chunk.chunk_id] = Hit(chunk, float(total), ScoreKind.LEXICAL)
    return sorted(
        picked.values(),
        key=lambda h: (sections.index(h.chunk.section_key), h.chunk.part_index, h.chunk.chunk_id),
    )


def _status(evidence: Sequence[Hit]) -> tuple[CandidateStatus, list[Hit]]:
    if not evidence:
        return CandidateStatus.INSUFFICIENT_EVIDENCE, []
    decision = decide(evidence)
    if decision.kind == K.DECISION_KIND_ANSWERABLE:
        return CandidateStatus.EVIDENCE_FOUND, list(evidence)
    if decision.kind == K.DECISION_KIND_VERIFY_PDF:
        return CandidateStatus.VERIFY_PDF, list(evidence)
    return CandidateStatus.INSUFFICIENT_EVIDENCE, []  # e.g. no provenance: not usable evidence


def facet_queries(facts: PatientFacts, catalog: Catalog, rules: Rules) -> dict[Facet, list[FactAnchors]]:
    plan: dict[Facet, list[FactAnchors]] = {}
    if facts.current_medications:
        plan[Facet.INTERACTION] = medication_anchors(catalog, facts.current_medications)
    warn = warning_anchors(facts, rules)
    if warn:
        plan[Facet.WARNING] = warn
    dose = dosage_anchors(facts, rules)
    if dose:
        plan[Facet.DOSAGE_CONTEXT] = dose
    return plan


def assess_candidate(
    store: Store,
    catalog: Catalog,
    drug_id: str,
    facts: PatientFacts,
    rules: Rules,
    policy: EvidencePolicy,
    vocabulary: Vocabulary,
) -> CandidateResult:
    if drug_id not in catalog.drugs:
        return CandidateResult(
            drug_id, drug_id, [], make_decision(R.DECISION_REASON_DRUG_NOT_FOUND, detail=drug_id)
        )
    plan = facet_queries(facts, catalog, rules)
    wanted = [
        s
        for f, secs in (
            (Facet.INTERACTION, INTERACTION_SECTIONS),
            (Facet.WARNING, WARNING_SECTIONS),
            (Facet.DOSAGE_CONTEXT, DOSAGE_SECTIONS),
        )
        if f in plan
        for s in secs
    ]
    chunks = store.scroll(ChunkFilter(drug_id=drug_id, section_keys=tuple(wanted))) if wanted else []
    budget = _SectionBudget(policy.safety_sections_per_candidate, [])
    facets: list[FacetResult] = []
    # The whole-section facets first: pregnancy / breastfeeding answers are exact lookups.
    for wanted_flag, facet, section_key in (
        (facts.pregnant, Facet.PREGNANCY, PREGNANCY_SECTION),
        (facts.breastfeeding, Facet.BREASTFEEDING, BREASTFEEDING_SECTION),
    ):
        if wanted_flag:
            status, kept = _status(section_hits(store, drug_id, section_key))
            facets.append(FacetResult(facet, status, kept, vocabulary.title(section_key)))
    for facet, sections in (
        (Facet.INTERACTION, INTERACTION_SECTIONS),
        (Facet.WARNING, WARNING_SECTIONS),
        (Facet.DOSAGE_CONTEXT, DOSAGE_SECTIONS),
    ):
        if facet not in plan:
            continue
        hits = lexical_facet(chunks, sections, plan[facet], policy, budget)
        status, kept = _status(hits)
        facets.append(FacetResult(facet, status, kept, "; ".join(f.label for f in plan[facet])))
    evidence = [h for f in facets for h in f.evidence]
    decision = decide(evidence) if evidence else make_decision(R.DECISION_REASON_INSUFFICIENT_EVIDENCE)
    return CandidateResult(drug_id, catalog.display_name(drug_id), facets, decision)
