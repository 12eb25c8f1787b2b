"""From a reading to the evidence an answer may use: the route's retrieval (retrieval.routes, the same as
Retrieve's), numbered evidence blocks, the presentation plan, and the notices the service writes itself.

Notices are never claims. Said FIRST, before the section they are about:
* a group the question names (a child, an elderly or renal patient ...) that the cited section says nothing
  for ("the book's gaps said aloud"), naming the group;
* a patient whose age or weight lies outside the bounds the section gives ("từ 6 tuổi" for a 4-year-old),
  else the dosing line for the patient's age group ("Người lớn" for 40 years: answer.age_lines);
* "does X cause Y" when X's effect sections do not name Y ("không có nghĩa là không xảy ra").
Said AFTER: each patient fact with nothing found ("không có nghĩa là an toàn"), and each table or 2-D
formula that must be read on its page.
Blocking (store work): the pipeline schedules it (api/work.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from rag_server.answer.age_lines import age_lines
from rag_server.answer.bounds import AGE, WEIGHT, Bound, bounds_in, outside
from rag_server.answer.model import Block, EvidenceBlock, Plan
from rag_server.answer.segments import segments
from rag_server.domain import Chunk, ChunkKind, Decision, FactMatch, Hit, Reason, ScoreKind, SourceRef
from rag_server.retrieval import patient_safety
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import decide
from rag_server.retrieval.results import (
    AssessmentResult,
    CandidateResult,
    CandidateStatus,
    Facet,
    IndicationCandidate,
    Route,
)
from rag_server.retrieval.routes import retrieve
from rag_server.retrieval.section import emergency_hits, whole_section
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter
from rag_server.text.match import find_any, tokenize
from rag_server.text.normalize import fold
from rag_server.understanding.frame import Group, QueryFrame, Reading, SituationKind
from rag_server.vocabulary.language import Language
from rag_server.vocabulary.strings import Strings

MAX_NAMED_FORMS = 3  # the book's words named beside an effect typed in other words

_PLANS = {
    Route.SECTION: Plan.WHOLE_SECTION,
    Route.SECTION_POOLED: Plan.WHOLE_SECTION,
    Route.DRUG_OVERVIEW: Plan.OVERVIEW,
    Route.FREE_FORM: Plan.MOST_RELEVANT,
    Route.CORPUS_SEARCH: Plan.MOST_RELEVANT,
    Route.INDICATION: Plan.INDICATION_LIST,
    Route.PATIENT: Plan.PATIENT_FACETS,
    Route.EFFECT: Plan.EFFECT,
}


@dataclass
class Gathered:
    decision: Decision
    route: Route
    plan: Plan = Plan.WHOLE_SECTION
    evidence: tuple[EvidenceBlock, ...] = ()
    lead: list[Block] = field(default_factory=list)  # notices said before the answer
    notices: list[Block] = field(default_factory=list)  # notices said after it
    candidates: list[IndicationCandidate] = field(default_factory=list)
    assessment: AssessmentResult | None = None


def title_of(chunk: Chunk) -> str:
    return f"{chunk.drug_name}: {chunk.section_title}"


def pages_text(refs: Sequence[SourceRef]) -> str:
    printed = sorted({r.printed_page for r in refs if r.printed_page > 0})
    return ", ".join(str(p) for p in printed) or ", ".join(str(r.physical_page) for r in refs)


def visual_notices(blocks: Sequence[EvidenceBlock], language: Language) -> list[Block]:
    """One notice per answer block title with the pages of its tables and formulas (chunks that must be
    read on the page, and the visual spans of prose chunks)."""
    pages: dict[str, dict[SourceRef, None]] = {}
    first: dict[str, Chunk] = {}
    for b in blocks:
        if b.chunk.requires_visual_check or b.chunk.visual_spans:
            pages.setdefault(b.title, {}).update(dict.fromkeys(b.chunk.source_refs))
            first.setdefault(b.title, b.chunk)
    out: list[Block] = []
    for title, refs in pages.items():
        chunk = first[title]
        note = language.strings.notice("visual", pages=pages_text(list(refs)))
        out.append(
            Block(
                title,
                section_key=chunk.section_key,
                drug_id=chunk.drug_id,
                requires_visual_check=True,
                pages=tuple(refs),
                note=note,
            )
        )
    return out


def number(
    hits: Sequence[tuple[Hit, str, str, tuple[str, ...], tuple[FactMatch, ...]]],
) -> tuple[EvidenceBlock, ...]:
    """Evidence blocks numbered from 1, each chunk once, in the order given."""
    seen: dict[str, EvidenceBlock] = {}
    for hit, title, focus, forms, facts in hits:
        if hit.chunk.chunk_id not in seen:
            seen[hit.chunk.chunk_id] = EvidenceBlock(len(seen) + 1, hit.chunk, title, focus, forms, facts)
    return tuple(seen.values())


def gather(reading: Reading, corpus: Corpus, providers: Providers) -> Gathered:
    """The evidence of a reading, its plan and its notices (see the module doc)."""
    frame = reading.frame
    language = corpus.language
    result = retrieve(reading, corpus, providers)
    result.evidence = located(result.evidence, corpus)
    plan = _PLANS.get(result.route, Plan.MOST_RELEVANT)
    if result.route is Route.PATIENT and result.assessment is not None:
        return _patient(result.decision, result.assessment, frame, language)
    if result.route is Route.INDICATION:
        forms = _condition_forms(frame, language)
        named = [(c.drug_name, h) for c in result.candidates for h in c.evidence]
        boxed = located([h for _, h in named], corpus)
        hits = [
            (h, f"{name}: {language.vocabulary.title(h.chunk.section_key)}", frame.indication, forms, ())
            for (name, _), h in zip(named, boxed, strict=True)
        ]
        evidence = number(hits)
        return Gathered(
            result.decision,
            result.route,
            plan,
            evidence,
            notices=visual_notices(evidence, language),
            candidates=list(result.candidates),
        )
    evidence = number([(h, title_of(h.chunk), "", (), ()) for h in result.evidence])
    gathered = Gathered(
        result.decision, result.route, plan, evidence, notices=visual_notices(evidence, language)
    )
    if result.decision.reason is Reason.EFFECT_NOT_LISTED and frame.effect is not None:
        gathered.lead.append(_not_listed(frame, result.read_sections, corpus))
    if plan is Plan.WHOLE_SECTION and result.decision.usable:
        gaps = gap_notices(frame, evidence, language)
        gathered.lead.extend(gaps)
        if result.route is Route.SECTION:
            gathered = _own_sections(gathered, frame, gaps, corpus)
            gathered = _section_facts(gathered, frame, corpus, providers)
    elif result.route is Route.EFFECT:  # the effect asked, then what the patient's facts matched
        gathered = _section_facts(gathered, frame, corpus, providers)
    return gathered


def located(hits: Sequence[Hit], corpus: Corpus) -> list[Hit]:
    """The hits with the page boxes of their text (a search returns chunks without them, to keep its
    payloads small): one exact lookup of the prose chunks that lack them, so every cited span can be
    highlighted on the page. A chunk the store no longer has keeps its hit as it was."""
    missing = tuple(dict.fromkeys(
        h.chunk.chunk_id for h in hits if not h.chunk.boxes and h.chunk.chunk_kind is ChunkKind.PROSE
    ))
    if not missing:
        return list(hits)
    full = {c.chunk_id: c for c in corpus.store.scroll(ChunkFilter(chunk_ids=missing, with_boxes=True))}
    return [replace(h, chunk=full[h.chunk.chunk_id]) if h.chunk.chunk_id in full else h for h in hits]


def _condition_forms(frame: QueryFrame, language: Language) -> tuple[str, ...]:
    """The condition of an indication lookup and its clinical synonyms."""
    specs = language.clinical.conditions_named(tokenize(frame.indication))
    return tuple(dict.fromkeys([frame.indication, *(f.text for s in specs for f in s.forms)]))


def _not_listed(frame: QueryFrame, read: Sequence[tuple[str, str]], corpus: Corpus) -> Block:
    language = corpus.language
    assert frame.effect is not None
    drug_id = read[0][0] if read else (frame.drug_ids[0] if frame.drug_ids else "")
    name = corpus.catalog.display_name(drug_id) if corpus.catalog is not None else drug_id
    titles = ", ".join(f"«{language.vocabulary.title(k)}»" for d, k in read if d == drug_id)
    effect = frame.effect.display
    # an effect is also named in the book's other words for it: "lose hair (rụng tóc, hói)", "tim đập nhanh
    # (nhịp tim nhanh, đánh trống ngực)", so the reader knows which words were looked for
    book = [f for f in frame.effect.forms if not f.isascii() and fold(f) != fold(effect)][:MAX_NAMED_FORMS]
    named = f"{effect} ({', '.join(book)})" if book else effect
    note = language.strings.notice("effect_not_listed", effect=named, sections=titles, drug=name)
    return Block(f"{name}: {effect}", drug_id=drug_id, note=note)


# ------------------------------------------------------------------------------------------ gaps
def gap_notices(frame: QueryFrame, evidence: Sequence[EvidenceBlock], language: Language) -> list[Block]:
    """For each group of the patient asked about: the section says nothing for it, or the patient lies
    outside the age or weight bounds it gives (see the module doc)."""
    rules, strings = language.rules, language.strings
    roles = language.vocabulary.roles
    own = {Group.PREGNANT: roles.pregnancy, Group.BREASTFEEDING: roles.breastfeeding}
    groups = [
        g for g in frame.patient.groups if not (g is Group.INFANT and Group.CHILD in frame.patient.groups)
    ]
    out: list[Block] = []
    for title, blocks in _by_title(evidence).items():
        chunk = blocks[0].chunk
        section_title = language.vocabulary.title(chunk.section_key)
        texts = [
            s.text for b in blocks if b.chunk.chunk_kind is ChunkKind.PROSE for s in segments(b.chunk.text)
        ]
        outside_said = False
        for group in groups:
            if own.get(group) == chunk.section_key:
                continue
            words = next((g for g in rules.groups if g.name == group.value), None)
            if words is None:
                continue
            about = [t for t in texts if find_any(tokenize(t), words.anchors)]
            name = strings.groups.get(group.value, group.value)
            if not about:
                out.append(
                    Block(
                        title,
                        section_key=chunk.section_key,
                        drug_id=chunk.drug_id,
                        note=strings.notice(
                            "group_gap", section=section_title, drug=chunk.drug_name, group=name
                        ),
                    )
                )
                continue
            if words.bounds and chunk.section_key == roles.dosage:
                note = _outside(frame, about, language, section_title, chunk.drug_name)
                if note:
                    outside_said = True
                    out.append(Block(title, section_key=chunk.section_key, drug_id=chunk.drug_id, note=note))
        if chunk.section_key == roles.dosage and not outside_said:
            note = age_lines(frame, texts, language, section_title, chunk.drug_name)
            if note:
                out.append(Block(title, section_key=chunk.section_key, drug_id=chunk.drug_id, note=note))
    return out


def _outside(frame: QueryFrame, texts: Sequence[str], language: Language, section: str, drug: str) -> str:
    rules = language.rules
    assert rules.bounds is not None
    numbers = [(p.folded, v) for p, v in language.situations.numbers]
    bounds: list[Bound] = [b for t in texts for b in bounds_in(t, rules.bounds, numbers)]
    patient = frame.patient
    age = patient.age_in_years
    for value, kind, said in (
        (age, AGE, _age_text(frame)),
        (patient.weight_kg, WEIGHT, f"{patient.weight_kg:g} kg" if patient.weight_kg else ""),
    ):
        if value is None:
            continue
        out = outside(value, kind, bounds)
        if out:
            shown = "; ".join(dict.fromkeys(b.text for b in out))
            return language.strings.notice(
                "outside_bounds", patient=said, section=section, drug=drug, bounds=shown
            )
    return ""


def _age_text(frame: QueryFrame) -> str:
    p = frame.patient
    if p.age_text:
        return p.age_text
    if p.age_months is not None:
        return f"{p.age_months} tháng tuổi"
    return f"{p.age_years} tuổi" if p.age_years is not None else ""


def _by_title(evidence: Sequence[EvidenceBlock]) -> dict[str, list[EvidenceBlock]]:
    out: dict[str, list[EvidenceBlock]] = {}
    for block in evidence:
        out.setdefault(block.title, []).append(block)
    return out


# ------------------------------------------------------------------------------------------ patients
FacetHit = tuple[Hit, str, str, tuple[str, ...], tuple[FactMatch, ...]]


def _patient(
    decision: Decision, assessed: AssessmentResult, frame: QueryFrame, language: Language
) -> Gathered:
    """Per drug and facet, the chunks with what each fact matched there; each fact with nothing found is
    said plainly (never a first sentence instead), and a patient outside the age or weight bounds of the
    dosage found is told so first."""
    hits, lead, notices = facet_hits(assessed, frame, language)
    evidence = number(hits)
    notices = visual_notices(evidence, language) + notices
    return Gathered(
        decision,
        Route.PATIENT,
        Plan.PATIENT_FACETS,
        evidence,
        lead=lead,
        notices=notices,
        assessment=assessed,
    )


def facet_hits(
    assessed: AssessmentResult, frame: QueryFrame, language: Language, skip: Sequence[Facet] = ()
) -> tuple[list[FacetHit], list[Block], list[Block]]:
    """(the hits of every facet but `skip`, with what each fact matched; lead notices; not-found notices)."""
    strings = language.strings
    hits: list[FacetHit] = []
    lead: list[Block] = []
    notices: list[Block] = []
    for candidate in assessed.candidates:
        for facet in candidate.facets:
            if facet.facet in skip:
                continue
            facet_title = strings.facets[facet.facet.value]
            title = f"{candidate.drug_name}: {facet_title}"
            asked = [f for f in facet.query.split("; ") if f]
            if facet.status is CandidateStatus.INSUFFICIENT_EVIDENCE or not facet.evidence:
                notices.extend(_not_found(title, candidate, facet_title, asked, strings))
                continue
            whole = facet.facet in (Facet.PREGNANCY, Facet.BREASTFEEDING)
            for hit in facet.evidence:
                matches = () if whole else tuple(m for m in facet.matches if m.chunk_id == hit.chunk.chunk_id)
                hits.append((hit, title, facet.query, (), matches))
            if not whole:
                matched = {m.fact for m in facet.matches} | {m.name for m in facet.matches}
                missing = [f for f in asked if f not in matched]
                notices.extend(_not_found(title, candidate, facet_title, missing, strings))
            if facet.facet is Facet.DOSAGE_CONTEXT:
                texts = [s.text for h in facet.evidence for s in segments(h.chunk.text)]
                note = _outside(
                    frame, _about_bounded_groups(frame, texts, language), language, facet_title,
                    candidate.drug_name,
                )
                note = note or age_lines(frame, texts, language, facet_title, candidate.drug_name)
                if note:
                    lead.append(Block(title, drug_id=candidate.drug_id, note=note))
    return hits, lead, notices


def _own_sections(gathered: Gathered, frame: QueryFrame, gaps: Sequence[Block], corpus: Corpus) -> Gathered:
    """A pregnant or breastfeeding patient's question answered from another section that says nothing for
    her ("liều zelvorin cho bà bầu"): after that gap is said, her own section of the drug is shown whole
    too (the pregnancy or breastfeeding section), so the answer is not only the silence."""
    roles = corpus.language.vocabulary.roles
    own = {Group.PREGNANT: roles.pregnancy, Group.BREASTFEEDING: roles.breastfeeding}
    if not gaps or not frame.drug_ids:
        return gathered
    drug_id = frame.drug_ids[0]
    shown = {b.chunk.section_key for b in gathered.evidence}
    keys = [own[g] for g in frame.patient.groups if g in own and own[g] not in shown]
    extra = [h for key in keys for h in whole_section(corpus, drug_id, key).hits]
    if not extra:
        return gathered
    kept: list[FacetHit] = [
        (Hit(b.chunk, 1.0, ScoreKind.EXACT), b.title, b.focus, b.focus_forms, b.facts)
        for b in gathered.evidence
    ]
    added: list[FacetHit] = [(h, title_of(h.chunk), "", (), ()) for h in located(extra, corpus)]
    evidence = number(kept + added)
    gathered.evidence = evidence
    gathered.decision = decide([b.chunk for b in evidence])
    gathered.notices.extend(visual_notices(evidence[len(kept):], corpus.language))
    return gathered


def _section_facts(
    gathered: Gathered, frame: QueryFrame, corpus: Corpus, providers: Providers
) -> Gathered:
    """A section or effect question that also states medicines the patient takes, conditions or allergies
    ("đang uống viên sắt, travoxan uống thế nào"): the section whole (or the effect's sentences), then
    what each of those facts matched in the drug's other sections (or that nothing was found there, the
    section asked included: "bệnh nhân bị hen, X cần thận trọng gì" says when neither the precautions
    nor the contraindications name asthma). Chunks already shown, and the dosing context of a dosing
    question (said by the gap notices), are not repeated."""
    facts = frame.patient
    if not (facts.current_medications or facts.conditions or facts.allergies) or not frame.drug_ids:
        return gathered
    roles = corpus.language.vocabulary.roles
    skip = [Facet.PREGNANCY, Facet.BREASTFEEDING]
    if frame.section_key in roles.dosage_facet:  # the gap notices say the age and weight bounds
        skip.append(Facet.DOSAGE_CONTEXT)
    assessed = patient_safety.assess(frame, corpus, providers, Timings())
    hits, lead, notices = facet_hits(assessed, frame, corpus.language, skip)
    shown = {b.chunk.chunk_id for b in gathered.evidence}
    hits = [h for h in hits if h[0].chunk.chunk_id not in shown]  # the section asked is already whole
    if not hits and not notices:
        return gathered
    own: list[FacetHit] = [
        (Hit(b.chunk, 1.0, ScoreKind.EXACT), b.title, b.focus, b.focus_forms, b.facts)
        for b in gathered.evidence
    ]
    boxed = located([h for h, *_ in hits], corpus)
    extra: list[FacetHit] = [(h, t, f, ff, fm) for h, (_, t, f, ff, fm) in zip(boxed, hits, strict=True)]
    evidence = number(own + extra)
    gathered.evidence = evidence
    gathered.decision = decide([b.chunk for b in evidence])
    gathered.lead.extend(lead)
    gathered.notices.extend([*visual_notices(evidence[len(own):], corpus.language), *notices])
    return gathered


def _about_bounded_groups(frame: QueryFrame, texts: Sequence[str], language: Language) -> list[str]:
    """The sentences about the patient's own groups whose lines bound a dose by age or weight (a child, an
    infant: rules.toml [[group]] bounds): only they say whether the book doses this patient. An adult is
    never held against the bounds of a children's line ("Trẻ em dưới 12 tuổi" says nothing of 75 years)."""
    bounded = [
        g for g in language.rules.groups if g.bounds and g.name in {p.value for p in frame.patient.groups}
    ]
    return [t for t in texts if any(find_any(tokenize(t), g.anchors) for g in bounded)]


def _not_found(
    title: str, candidate: CandidateResult, facet: str, facts: Sequence[str], strings: Strings
) -> list[Block]:
    """Each fact with nothing found, said plainly, with where it was looked for."""
    return [
        Block(
            title,
            drug_id=candidate.drug_id,
            note=strings.notice("fact_not_found", fact=fact, facet=facet, drug=candidate.drug_name),
        )
        for fact in facts
    ]


# ------------------------------------------------------------------------------------------ emergencies
def urgent(frame: QueryFrame, corpus: Corpus) -> tuple[Decision, tuple[EvidenceBlock, ...]] | None:
    """The evidence of an emergency (retrieval.section.emergency_hits: the overdose section, or for a
    reaction happening now the section on managing it), None when no drug has one."""
    from rag_server.retrieval.decide import decide

    hits: list[tuple[Hit, str, str, tuple[str, ...], tuple[FactMatch, ...]]] = [
        (h, title_of(h.chunk), "", (), ())
        for h in emergency_hits(corpus, frame.drug_ids, frame.situation.kind is SituationKind.REACTION)
    ]
    if not hits:
        return None
    evidence = number(hits)
    decision = decide([b.chunk for b in evidence])
    return (decision, evidence) if decision.usable else None
