"""Patient-specific safety evidence for already-indicated drugs (seed 000 §6). Never creates candidates.

Each facet is its own relation-specific lexical lookup over the drug's own sections (a scroll, then
word-boundary matching), and every chunk it keeps says what matched and how (domain.FactMatch):
  interaction     current medicines -> tuong_tac_thuoc; medicines are read as clinicians type them (doses,
                  forms, routes, frequencies, lists) and matched by name, spelling variant, bounded typo or
                  class (retrieval/interactions.py)
  warning         conditions (clinical synonyms included) / allergies / age -> chong_chi_dinh, than_trong;
                  needs a clinical anchor; an allergen is also matched like a medicine name
  dosage context  renal / hepatic / age -> lieu_luong_va_cach_dung; needs a clinical anchor
  pregnancy, breastfeeding -> the section route (whole section)
Per section and per patient fact at most safety_hits_per_section chunks; at most
safety_sections_per_candidate lexical sections per drug. No hit -> INSUFFICIENT_EVIDENCE, never "safe".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_server.domain import Chunk, DecisionKind, FactMatch, Hit, MatchKind, Reason, ScoreKind
from rag_server.reasons import make_decision
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import decide
from rag_server.retrieval.interactions import ChunkWords, best_chunks
from rag_server.retrieval.lexical import anchor_matches
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import (
    AssessmentResult,
    CandidateResult,
    CandidateStatus,
    Facet,
    FacetResult,
)
from rag_server.retrieval.section import section_hits
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter, Store
from rag_server.text.match import Phrase, phrase, tokenize
from rag_server.understanding.catalog import Catalog
from rag_server.understanding.drug_classes import ClassIndex
from rag_server.understanding.frame import PatientFacts, QueryFrame
from rag_server.understanding.medications import MedicationName, read_medications
from rag_server.understanding.patient import FactAnchors, dosage_anchors, warning_anchors
from rag_server.vocabulary import Vocabulary
from rag_server.vocabulary.clinical import ClinicalVocabulary
from rag_server.vocabulary.rules import Rules


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


@dataclass
class PatientContext:
    """What a patient assessment reads with: built once per served generation."""

    catalog: Catalog
    rules: Rules
    clinical: ClinicalVocabulary
    classes: ClassIndex
    policy: EvidencePolicy
    vocabulary: Vocabulary


@dataclass
class _Picked:
    hits: dict[str, Hit] = field(default_factory=dict)
    matches: list[FactMatch] = field(default_factory=list)

    def add(self, chunk: Chunk, score: float, matches: Sequence[FactMatch]) -> None:
        prior = self.hits.get(chunk.chunk_id)
        total = score + (prior.score if prior else 0.0)
        self.hits[chunk.chunk_id] = Hit(chunk, float(total), ScoreKind.LEXICAL)
        self.matches.extend(m for m in matches if m not in self.matches)

    def ordered(self, sections: Sequence[str]) -> list[Hit]:
        return sorted(
            self.hits.values(),
            key=lambda h: (sections.index(h.chunk.section_key), h.chunk.part_index, h.chunk.chunk_id),
        )


def with_synonyms(facts: Sequence[FactAnchors], clinical: ClinicalVocabulary) -> list[FactAnchors]:
    """Each fact's anchors plus the names and synonyms of the clinical conditions it names."""
    out: list[FactAnchors] = []
    for fact in facts:
        extra: list[Phrase] = []
        for spec in clinical.conditions_named(tokenize(fact.label)):
            extra.extend(spec.forms)
        out.append(FactAnchors(fact.label, tuple(dict.fromkeys([*fact.anchors, *extra]))))
    return out


def lexical_facet(
    chunks: Sequence[Chunk],
    sections: Sequence[str],
    facts: Sequence[FactAnchors],
    policy: EvidencePolicy,
    budget: _SectionBudget,
) -> tuple[list[Hit], list[FactMatch]]:
    """For each fact and section: the chunks with the most distinct anchors (>= 1), best first."""
    prepared = [(c, tokenize(c.text)) for c in chunks if c.section_key in sections]
    picked = _Picked()
    for fact in facts:
        typed = phrase(fact.label)
        for section_key in sections:
            scored = []
            for chunk, toks in prepared:
                if chunk.section_key != section_key:
                    continue
                matched = anchor_matches(toks, fact.anchors)
                if matched:
                    scored.append((len({m.folded for m in matched}), chunk, matched))
            scored.sort(key=lambda s: (-s[0], s[1].part_index, s[1].chunk_id))
            for score, chunk, matched in scored[: policy.safety_hits_per_section]:
                if not budget.admit(section_key):
                    break
                kinds = [MatchKind.EXACT if m.folded == typed.folded else MatchKind.SYNONYM for m in matched]
                picked.add(
                    chunk,
                    score,
                    [
                        FactMatch(fact.label, fact.label, m.text, kind, chunk.chunk_id)
                        for m, kind in zip(matched, kinds, strict=True)
                    ],
                )
    return picked.ordered(sections), picked.matches


def medication_facet(
    chunks: Sequence[Chunk],
    sections: Sequence[str],
    medications: Sequence[MedicationName],
    ctx: PatientContext,
    budget: _SectionBudget,
) -> tuple[list[Hit], list[FactMatch]]:
    """For each medicine: the chunks of `sections` that name it or its class, best first."""
    texts = [ChunkWords.of(c) for c in chunks if c.section_key in sections]
    picked = _Picked()
    for medication in medications:
        for section_key in sections:
            candidates = [t for t in texts if t.chunk.section_key == section_key]
            found = best_chunks(
                medication,
                candidates,
                ctx.catalog,
                ctx.classes,
                ctx.clinical.medication,
                ctx.policy.safety_hits_per_section,
            )
            for text, matches in found:
                if not budget.admit(section_key):
                    break
                picked.add(text.chunk, float(len(matches)), matches)
    return picked.ordered(sections), picked.matches


def _status(evidence: Sequence[Hit]) -> tuple[CandidateStatus, list[Hit]]:
    if not evidence:
        return CandidateStatus.INSUFFICIENT_EVIDENCE, []
    decision = decide(evidence)
    if decision.kind == DecisionKind.ANSWERABLE:
        return CandidateStatus.EVIDENCE_FOUND, list(evidence)
    if decision.kind == DecisionKind.VERIFY_PDF:
        return CandidateStatus.VERIFY_PDF, list(evidence)
    return CandidateStatus.INSUFFICIENT_EVIDENCE, []  # e.g. no provenance: not usable evidence


def _facet(facet: Facet, hits: list[Hit], matches: list[FactMatch], query: str) -> FacetResult:
    status, kept = _status(hits)
    kept_ids = {h.chunk.chunk_id for h in kept}
    return FacetResult(facet, status, kept, query, [m for m in matches if m.chunk_id in kept_ids])


@dataclass(frozen=True)
class PatientReading:
    """A patient's facts read once per request (not once per drug assessed)."""

    facts: PatientFacts
    medications: list[MedicationName]
    allergens: list[MedicationName]
    warnings: list[FactAnchors]
    dosage: list[FactAnchors]


def read_patient(
    facts: PatientFacts, medications: Sequence[MedicationName], ctx: PatientContext
) -> PatientReading:
    """The anchors of each fact (the frame has the medications already read as typed)."""
    return PatientReading(
        facts,
        list(medications),
        read_medications(list(facts.allergies), ctx.clinical.medication, ctx.catalog),
        with_synonyms(warning_anchors(facts, ctx.rules), ctx.clinical),
        with_synonyms(dosage_anchors(facts, ctx.rules), ctx.clinical),
    )


def assess_candidate(
    store: Store, ctx: PatientContext, drug_id: str, reading: PatientReading
) -> CandidateResult:
    catalog = ctx.catalog
    if drug_id not in catalog.drugs:
        return CandidateResult(drug_id, drug_id, [], make_decision(Reason.DRUG_NOT_FOUND, detail=drug_id))
    facts = reading.facts
    medications, allergens, warnings, dosage = (
        reading.medications,
        reading.allergens,
        reading.warnings,
        reading.dosage,
    )
    roles = ctx.vocabulary.roles
    interaction_sections, warning_sections = roles.interaction_facet, roles.warning_facet
    dosage_sections = roles.dosage_facet
    wanted = [
        *(interaction_sections if medications else ()),
        *(warning_sections if warnings or allergens else ()),
        *(dosage_sections if dosage else ()),
    ]
    chunks = store.scroll(ChunkFilter(drug_id=drug_id, section_keys=tuple(wanted))) if wanted else []
    budget = _SectionBudget(ctx.policy.safety_sections_per_candidate, [])
    facets: list[FacetResult] = []
    # The whole-section facets first: pregnancy / breastfeeding answers are exact lookups.
    for wanted_flag, facet, section_key in (
        (facts.pregnant, Facet.PREGNANCY, roles.pregnancy),
        (facts.breastfeeding, Facet.BREASTFEEDING, roles.breastfeeding),
    ):
        if wanted_flag:
            status, kept = _status(section_hits(store, drug_id, section_key))
            facets.append(FacetResult(facet, status, kept, ctx.vocabulary.title(section_key)))
    if facts.current_medications:
        hits, matches = medication_facet(chunks, interaction_sections, medications, ctx, budget)
        back, back_matches = _both_ways(store, ctx, drug_id, medications)
        query = "; ".join(dict.fromkeys(m.name for m in medications)) or "; ".join(facts.current_medications)
        facets.append(_facet(Facet.INTERACTION, [*hits, *back], [*matches, *back_matches], query))
    if warnings or allergens:
        hits, matches = lexical_facet(chunks, warning_sections, warnings, ctx.policy, budget)
        more, more_matches = medication_facet(chunks, warning_sections, allergens, ctx, budget)
        seen = {h.chunk.chunk_id for h in hits}
        hits = sorted(
            [*hits, *(h for h in more if h.chunk.chunk_id not in seen)],
            key=lambda h: (warning_sections.index(h.chunk.section_key), h.chunk.part_index),
        )
        labels = [f.label for f in warnings] + [
            a.name for a in allergens if a.name not in {f.label for f in warnings}
        ]
        facets.append(_facet(Facet.WARNING, hits, [*matches, *more_matches], "; ".join(labels)))
    if dosage:
        hits, matches = lexical_facet(chunks, dosage_sections, dosage, ctx.policy, budget)
        facets.append(_facet(Facet.DOSAGE_CONTEXT, hits, matches, "; ".join(f.label for f in dosage)))
    evidence = [h for f in facets for h in f.evidence]
    decision = decide(evidence) if evidence else make_decision(Reason.INSUFFICIENT_EVIDENCE)
    return CandidateResult(drug_id, catalog.display_name(drug_id), facets, decision)


def _both_ways(
    store: Store, ctx: PatientContext, drug_id: str, medications: Sequence[MedicationName]
) -> tuple[list[Hit], list[FactMatch]]:
    """An interaction is read from both monographs: a medicine the patient takes that the book has is
    checked for the drug asked about in ITS interaction section too ("đang dùng acenocoumarol, kê
    ciprofloxacin": acenocoumarol's section names the fluoroquinolones)."""
    sections = ctx.vocabulary.roles.interaction_facet[:1]
    this = read_medications([ctx.catalog.display_name(drug_id)], ctx.clinical.medication, ctx.catalog)
    hits: list[Hit] = []
    matches: list[FactMatch] = []
    for other in dict.fromkeys(m.drug_id for m in medications if m.drug_id and m.drug_id != drug_id):
        chunks = store.scroll(ChunkFilter(drug_id=other, section_keys=tuple(sections)))
        budget = _SectionBudget(len(sections), [])
        found, found_matches = medication_facet(chunks, sections, this, ctx, budget)
        hits.extend(found)
        matches.extend(found_matches)
    return hits, matches


def assess(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> AssessmentResult:
    """Every facet of the patient's facts against each drug's own sections (never creates candidates)."""
    if not corpus.loaded:
        return AssessmentResult(make_decision(Reason.CORPUS_NOT_LOADED))
    assert corpus.catalog is not None and corpus.classes is not None
    language = corpus.language
    ctx = PatientContext(
        corpus.catalog, language.rules, language.clinical, corpus.classes, corpus.policy, language.vocabulary
    )
    with timings.stage("read_facts"):
        reading = read_patient(frame.patient, frame.medications, ctx)
    with timings.stage("assess"):
        candidates = [assess_candidate(corpus.store, ctx, d, reading) for d in frame.drug_ids]
    evidence = [h for c in candidates for f in c.facets for h in f.evidence]
    with timings.stage("decide"):
        if evidence:
            decision = decide(evidence)
        elif candidates and all(c.decision.reason == Reason.DRUG_NOT_FOUND for c in candidates):
            decision = make_decision(Reason.DRUG_NOT_FOUND, detail=", ".join(c.drug_id for c in candidates))
        else:
            decision = make_decision(Reason.INSUFFICIENT_EVIDENCE)
    return AssessmentResult(decision, candidates)
