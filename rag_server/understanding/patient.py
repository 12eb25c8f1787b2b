"""Patient facts from a question, by keyword rules (rules.toml), and the anchors each fact needs.

current_medications are the catalog drugs named right after "đang dùng / đang uống ..." (a list joined by
connectors counts); the other drugs named are the candidates the question asks about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_server.text.match import Phrase, Tok, find_any, match_at, phrase, tokenize
from rag_server.understanding.catalog import Mention
from rag_server.vocabulary.rules import Condition, Rules


@dataclass
class PatientFacts:
    current_medications: list[str] = field(default_factory=list)  # drug_ids (or free-text names)
    conditions: list[str] = field(default_factory=list)  # canonical names from rules.toml
    age_years: int | None = None
    pregnant: bool = False
    breastfeeding: bool = False
    renal_impairment: bool = False
    hepatic_impairment: bool = False
    allergies: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.current_medications
            or self.conditions
            or self.age_years is not None
            or self.pregnant
            or self.breastfeeding
            or self.renal_impairment
            or self.hepatic_impairment
            or self.allergies
        )


@dataclass(frozen=True)
class PatientReading:
    facts: PatientFacts
    current_mentions: tuple[int, ...]  # indices into the mentions list
    fact_spans: tuple[tuple[int, int], ...]  # token spans of the detected facts


def _flag(facts: PatientFacts, cond: Condition) -> None:
    if cond.flag == "renal_impairment":
        facts.renal_impairment = True
    elif cond.flag == "hepatic_impairment":
        facts.hepatic_impairment = True


def extract_patient(toks: Sequence[Tok], mentions: Sequence[Mention], rules: Rules) -> PatientReading:
    facts = PatientFacts()
    spans: list[tuple[int, int]] = []
    drug_tokens = {j for m in mentions for j in range(m.start, m.end)}
    free = [t if i not in drug_tokens else Tok("\x00", "\x00", t.start, t.end) for i, t in enumerate(toks)]

    def hits(patterns: Sequence[Phrase], effects: bool = False) -> list[tuple[int, Phrase]]:
        found = find_any(free, patterns)
        if effects:  # "có gây co giật không": an effect asked about, not the patient's condition
            found = [(i, p) for i, p in found if not _after_marker(free, i, rules.effect_markers)]
        spans.extend((i, i + len(p)) for i, p in found)
        return found

    facts.pregnant = bool(hits(rules.pregnant))
    facts.breastfeeding = bool(hits(rules.breastfeeding))
    for cond in rules.conditions:
        if hits(cond.detect, effects=True):
            if cond.flag == "allergy":
                facts.allergies.append(cond.name)
            else:
                facts.conditions.append(cond.name)
                _flag(facts, cond)
    folded = " ".join(t.folded for t in free if not t.is_punct)
    age = rules.age_pattern.search(folded)
    if age:
        value = int(age.group(1))
        facts.age_years = 0 if age.group(2) else value
        band = next((b for b in rules.age_bands if b.contains(facts.age_years)), None)
        if band is not None:  # keeps "6 tháng tuổi" (age_years 0 = not stated on the wire) usable
            facts.conditions.append(band.name)
    else:
        for band in rules.age_bands:
            if hits(band.detect):
                facts.conditions.append(band.name)
                break

    current, free_text = _current_medications(toks, mentions, rules)
    facts.current_medications = [d for i in current for d in mentions[i].drug_ids[:1]] + free_text
    return PatientReading(facts, tuple(current), tuple(spans))


def _after_marker(toks: Sequence[Tok], i: int, markers: Sequence[Phrase]) -> bool:
    return any(len(m) <= i and match_at(toks, i - len(m), m) for m in markers)


def _current_medications(
    toks: Sequence[Tok], mentions: Sequence[Mention], rules: Rules
) -> tuple[list[int], list[str]]:
    """Mentions that follow a trigger, possibly as a list ("đang dùng A và B, C"), and the names in that
    list the catalog does not know (kept as free text: they only ever match that exact name)."""
    triggers = find_any(toks, rules.current_medication_triggers)
    if not triggers:
        return [], []
    connectors = {p.raw[0] for p in rules.connectors if len(p) == 1}
    by_start = {m.start: i for i, m in enumerate(mentions)}
    picked: list[int] = []
    free: list[str] = []
    for pos, trig in triggers:
        j = pos + len(trig)
        pending: list[Tok] = []
        while j < len(toks):
            tok = toks[j]
            if j in by_start or tok.raw in connectors or tok.is_punct:
                _flush(pending, free, rules)
                pending = []
                if j in by_start:
                    picked.append(by_start[j])
                    j = mentions[by_start[j]].end
                    continue
                if tok.is_punct and tok.raw not in connectors:
                    break
                j += 1
            elif tok.folded in rules.stopwords or len(pending) >= MAX_FREE_NAME_WORDS:
                break
            else:
                pending.append(tok)
                j += 1
        _flush(pending, free, rules)
    return list(dict.fromkeys(picked)), list(dict.fromkeys(free))


MAX_FREE_NAME_WORDS = 3
MIN_FREE_NAME_CHARS = 4


def _flush(pending: Sequence[Tok], free: list[str], rules: Rules) -> None:
    """A free-text medicine name: Latin letters only (no Vietnamese diacritics), 1-3 words."""
    if pending and len(pending[0].folded) >= MIN_FREE_NAME_CHARS and all(t.raw == t.folded for t in pending):
        free.append(" ".join(t.raw for t in pending))


def facts_summary(facts: PatientFacts) -> str:
    parts: list[str] = []
    if facts.pregnant:
        parts.append("mang thai")
    if facts.breastfeeding:
        parts.append("cho con bú")
    parts.extend(facts.conditions)
    if facts.age_years is not None:
        parts.append(f"{facts.age_years} tuổi")
    parts.extend(facts.allergies)
    return "; ".join(parts)


@dataclass(frozen=True)
class FactAnchors:
    """One patient fact and the clinical terms a chunk must contain to speak about it."""

    label: str
    anchors: tuple[Phrase, ...]


def _flags(facts: PatientFacts) -> dict[str, bool]:
    return {"renal_impairment": facts.renal_impairment, "hepatic_impairment": facts.hepatic_impairment}


def condition_anchors(facts: PatientFacts, rules: Rules) -> list[FactAnchors]:
    """Flagged conditions, then each stated condition / allergy: a known one (by name or by one of its
    phrasings) brings its clinical anchors; an unknown one (a client's free text, e.g. an allergen) must
    occur literally. Age bands are left to the age facts."""
    out: dict[str, FactAnchors] = {}
    flags = _flags(facts)
    for cond in rules.conditions:
        if cond.flag and flags.get(cond.flag):
            out.setdefault(cond.name, FactAnchors(cond.name, cond.anchors))
    for text in [*facts.conditions, *facts.allergies]:
        toks = tokenize(text)
        known = next((c for c in rules.conditions if c.name == text or find_any(toks, c.detect)), None)
        if known is not None:
            out.setdefault(known.name, FactAnchors(known.name, known.anchors))
        elif not any(b.name == text or find_any(toks, b.detect) for b in rules.age_bands):
            out.setdefault(text, FactAnchors(text, (phrase(text),)))
    return list(out.values())


def warning_anchors(facts: PatientFacts, rules: Rules) -> list[FactAnchors]:
    """Conditions, allergies and age (chong_chi_dinh / than_trong facet)."""
    return [*condition_anchors(facts, rules), *_age_anchors(facts, rules)]


def dosage_anchors(facts: PatientFacts, rules: Rules) -> list[FactAnchors]:
    """Renal, hepatic and age facts only (lieu_luong_va_cach_dung facet)."""
    flagged = {c.name for c in rules.conditions if c.flag in ("renal_impairment", "hepatic_impairment")}
    organ = [f for f in condition_anchors(facts, rules) if f.label in flagged]
    return [*organ, *_age_anchors(facts, rules)]


def _age_anchors(facts: PatientFacts, rules: Rules) -> list[FactAnchors]:
    bands = [b for b in rules.age_bands if b.name in facts.conditions]
    if facts.age_years is not None:
        bands.extend(b for b in rules.age_bands if b.contains(facts.age_years) and b not in bands)
    return [FactAnchors(b.name, b.anchors) for b in bands[:1]]
