"""Patient facts from a question, by keyword rules (rules.toml), and the anchors each fact needs.

current_medications are the catalog drugs named right after "đang dùng / đang uống ..." (a list joined by
connectors counts); the other drugs named are the candidates the question asks about. The age is read in
years or months ("3 tháng tuổi", "18 months old"), a weight in kg ("trẻ 20 kg", never the "/kg" of a dose),
and the facts put the patient in groups (frame.Group): infant, child, elderly, pregnant, breastfeeding,
renal or hepatic impairment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rag_server.text.match import Phrase, Tok, claim, find_any, match_at, phrase, tokenize
from rag_server.understanding.catalog import Mention
from rag_server.understanding.frame import Group, PatientFacts
from rag_server.vocabulary.clinical import MedicineWords
from rag_server.vocabulary.rules import Condition, Rules

ELDERLY_FROM_YEARS = 65
ADULT_FROM_YEARS = 18
MAX_AGE_YEARS = 120
MAX_WEIGHT_KG = 300.0


@dataclass(frozen=True)
class PatientReading:
    facts: PatientFacts
    current_mentions: tuple[int, ...]  # indices into the mentions list
    fact_spans: tuple[tuple[int, int], ...]  # token spans of the detected facts


NURSLING_MAX_YEARS = 6  # an age told with breastfeeding below this is the nursling's, from it the mother's


def extract_patient(
    toks: Sequence[Tok],
    mentions: Sequence[Mention],
    rules: Rules,
    medicine_words: MedicineWords | None = None,
) -> PatientReading:
    """The patient facts of a question. `medicine_words`: the folded words that name medicines beyond the
    formulary, and their form words (Language.medicine_words: "viên sắt"), so a medicine typed in
    Vietnamese after "đang uống" is one too."""
    spans: list[tuple[int, int]] = []
    drug_tokens = {j for m in mentions for j in range(m.start, m.end)}
    free = [t if i not in drug_tokens else Tok("\x00", "\x00", t.start, t.end) for i, t in enumerate(toks)]

    def hits(patterns: Sequence[Phrase], effects: bool = False) -> list[tuple[int, Phrase]]:
        found = find_any(free, patterns)
        if effects:  # "có gây co giật không": an effect asked about, not the patient's condition
            found = [(i, p) for i, p in found if not _asked_effect(free, i, len(p), rules)]
        spans.extend((i, i + len(p)) for i, p in found)
        return found

    pregnant = bool(hits(rules.pregnant))
    breastfeeding = bool(hits(rules.breastfeeding))
    conditions: list[str] = []
    allergies: list[str] = []
    renal = hepatic = False
    every, owners = rules.condition_detects
    by_condition: dict[int, list[tuple[int, Phrase]]] = {}
    for hit in every.matches(free):  # one pass; then each condition's own claims, as find_any makes them
        for k in owners.get(id(hit[1]), ()):
            by_condition.setdefault(k, []).append(hit)

    def condition_hits(k: int) -> list[tuple[int, Phrase]]:
        found = claim(list(by_condition.get(k, ())), len(free))
        found = [(i, p) for i, p in found if not _asked_effect(free, i, len(p), rules)]
        spans.extend((i, i + len(p)) for i, p in found)
        return found

    for k, cond in enumerate(rules.conditions):
        if k in by_condition and condition_hits(k):
            if cond.flag == "allergy":
                allergies.append(cond.name)
                continue
            conditions.append(cond.name)
            renal = renal or cond.flag == "renal_impairment"
            hepatic = hepatic or cond.flag == "hepatic_impairment"
    spoken = [t for t in free if not t.is_punct]
    folded = " ".join(t.folded for t in spoken)
    breastfeeding = breastfeeding or bool(rules.breastfeeding_pattern.search(folded))
    years, months = read_age(folded, rules)
    age_text = _age_words(spoken, folded, rules)
    if breastfeeding and (years is None or years < NURSLING_MAX_YEARS):
        # "nursing a newborn", "cho bé 2 tháng bú": the age told is the nursling's; "tôi 38 tuổi đang cho
        # con bú" tells the mother's own
        years = months = None
        age_text = ""
    weight = read_weight(folded, rules)
    pregnant = pregnant or bool(rules.pregnancy_pattern.search(folded))  # "thai 32 tuần", "bầu 2 tháng"
    age = years if years is not None else (0 if months is not None else None)
    if age is not None:
        band = next((b for b in rules.age_bands if b.contains(age)), None)
        if band is not None:  # keeps "6 tháng tuổi" (age_years 0 = not stated on the wire) usable
            conditions.append(band.name)
    elif not breastfeeding:
        for band in rules.age_bands:
            if hits(band.detect):
                conditions.append(band.name)
                break
    current, free_text = _current_medications(toks, mentions, rules, medicine_words)
    medications = [d for i in current for d in mentions[i].drug_ids[:1]] + free_text
    facts = PatientFacts(
        current_medications=tuple(dict.fromkeys(medications)), conditions=tuple(dict.fromkeys(conditions)),
        age_years=age, pregnant=pregnant, breastfeeding=breastfeeding, renal_impairment=renal,
        hepatic_impairment=hepatic, allergies=tuple(dict.fromkeys(allergies)), age_months=months,
        weight_kg=weight, age_text=age_text,
    )
    return PatientReading(with_groups(facts, rules), tuple(current), tuple(spans))


def read_age(folded: str, rules: Rules) -> tuple[int | None, int | None]:
    """(years, months) stated in the folded text; months only when the age was given in months."""
    for pattern in rules.age_patterns:
        found = pattern.pattern.search(folded)
        if found is None:
            continue
        value = int(found.group(1))
        if pattern.unit == "weeks":  # an infant's age in weeks is kept in months (rounded down)
            value = value * 12 // 52
        if pattern.unit in ("months", "weeks"):
            return (value // 12 if value >= 12 else None), value
        return (value if value <= MAX_AGE_YEARS else None), None
    return None, None


def _age_words(spoken: Sequence[Tok], folded: str, rules: Rules) -> str:
    """The words of the question that stated the age ("6 tuần tuổi"), as typed."""
    for pattern in rules.age_patterns:
        found = pattern.pattern.search(folded)
        if found is None:
            continue
        first = folded[: found.start()].count(" ") if found.start() else 0
        count = found.group(0).strip().count(" ") + 1
        return " ".join(t.raw for t in spoken[first : first + count])
    return ""


def read_weight(folded: str, rules: Rules) -> float | None:
    found = rules.weight_pattern.search(folded)
    if found is None:
        return None
    value = float(found.group(1).replace(",", "."))
    return value if 0 < value <= MAX_WEIGHT_KG else None


def with_groups(facts: PatientFacts, rules: Rules) -> PatientFacts:
    """The facts with the groups they put the patient in."""
    groups: list[Group] = []
    age = facts.age_in_years
    if age is not None:
        if age < 1:
            groups.append(Group.INFANT)
        if age < ADULT_FROM_YEARS:
            groups.append(Group.CHILD)
        if age >= ELDERLY_FROM_YEARS:
            groups.append(Group.ELDERLY)
    for band in rules.age_bands:
        if band.name in facts.conditions and band.group:
            groups.append(Group(band.group))
            if band.group == Group.INFANT:
                groups.append(Group.CHILD)
    flags = ((facts.pregnant, Group.PREGNANT), (facts.breastfeeding, Group.BREASTFEEDING),
             (facts.renal_impairment, Group.RENAL), (facts.hepatic_impairment, Group.HEPATIC))
    groups.extend(group for on, group in flags if on)
    return replace(facts, groups=tuple(dict.fromkeys(groups)))


def _after_marker(toks: Sequence[Tok], i: int, markers: Sequence[Phrase]) -> bool:
    return any(len(m) <= i and match_at(toks, i - len(m), m) for m in markers)


EFFECT_LIST_REACH = 6  # tokens back from a join to the marker of the list it continues


def _asked_effect(toks: Sequence[Tok], i: int, n: int, rules: Rules) -> bool:
    """The condition at toks[i:i+n] is an effect asked about, not the patient's: right after an effect
    marker ("có gây co giật"), in a list after one ("gây phát ban hoặc hạ natri máu"), or right before a
    word asking for its cause ("kali máu thấp, có phải do …")."""
    if _after_marker(toks, i, rules.effect_markers):
        return True
    after = i + n + (1 if i + n < len(toks) and toks[i + n].raw == "," else 0)
    if any(match_at(toks, after, f) for f in rules.effect_followers):
        return True
    for join in rules.effect_joins:
        k = i - len(join)
        if k <= 0 or not match_at(toks, k, join):
            continue
        for m in range(k - 1, max(0, k - EFFECT_LIST_REACH) - 1, -1):
            if toks[m].is_punct and toks[m].raw != ",":
                break
            if _after_marker(toks, m, rules.effect_markers):
                return True
    return False


def _current_medications(
    toks: Sequence[Tok], mentions: Sequence[Mention], rules: Rules, medicine_words: MedicineWords | None
) -> tuple[list[int], list[str]]:
    """Mentions that follow a trigger, possibly as a list ("đang dùng A và B, C"), and the names in that
    list the catalog does not know (kept as free text: they only ever match that exact name)."""
    taking = find_any(toks, rules.current_medication_triggers)
    prescribed = {pos for pos, _ in find_any(toks, rules.prescribed_triggers)}
    triggers = sorted([*taking, *find_any(toks, rules.prescribed_triggers)], key=lambda t: t[0])
    if not triggers:
        return [], []
    connectors = {p.raw[0] for p in rules.connectors if len(p) == 1}
    # a class before the name ("thuốc lao isoniazid") joins the list like a connector
    classes = sorted((p for p in rules.connectors if len(p) > 1), key=len, reverse=True)
    by_start = {m.start: i for i, m in enumerate(mentions)}
    picked: list[int] = []
    free: list[str] = []
    for pos, trig in triggers:
        j = pos + len(trig)
        pending: list[Tok] = []
        while j < len(toks):
            tok = toks[j]
            joined = next((c for c in classes if j not in by_start and match_at(toks, j, c)), None)
            if joined is None and j not in by_start and toks[j - 1].folded == MEDICINE_WORD:
                # "thuốc" + a condition is a class too ("thuốc gút probenecid", "thuốc hen salbutamol")
                joined = next((c for c in rules.condition_phrases if match_at(toks, j, c)), None)
            if joined is not None:
                _flush(pending, free, medicine_words)
                pending = []
                j += len(joined)
                continue
            if j in by_start and pos in prescribed:
                break  # a drug the book has, prescribed beside: it may be the one asked about
            if j in by_start or tok.raw in connectors or tok.is_punct:
                _flush(pending, free, medicine_words)
                pending = []
                if j in by_start:
                    picked.append(by_start[j])
                    j = mentions[by_start[j]].end
                    continue
                if tok.is_punct and tok.raw not in connectors:
                    break
                j += 1
            elif (
                tok.folded in rules.stopwords
                or len(pending) >= MAX_FREE_NAME_WORDS
                or (tok.folded.isdigit() and any(match_at(toks, j + 1, d) for d in rules.durations))
                or any(match_at(toks, j, end) for end in rules.medication_list_ends)
            ):
                break
            else:
                pending.append(tok)
                j += 1
        _flush(pending, free, medicine_words)
    return list(dict.fromkeys(picked)), list(dict.fromkeys(free))


MAX_FREE_NAME_WORDS = 3
MEDICINE_WORD = "thuoc"  # folded "thuốc"
MIN_FREE_NAME_CHARS = 4


def _flush(pending: Sequence[Tok], free: list[str], words: MedicineWords | None = None) -> None:
    """A free-text medicine name: Latin letters only (no Vietnamese diacritics), 1-3 words, or a medicine's
    name with its form words ("viên sắt")."""
    if not pending:
        return
    latin = (
        len(pending[0].folded) >= MIN_FREE_NAME_CHARS
        and pending[0].folded.isalpha()  # "2000 mg" is a dose, not a name
        and all(t.raw == t.folded for t in pending)
    )
    named = words is not None and any(t.folded in words.names for t in pending) and all(
        t.folded in words.names or t.folded in words.forms for t in pending
    )
    if latin or named:
        free.append(" ".join(t.raw for t in pending))


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
        known = _known_condition(text, toks, rules.conditions)
        if known is not None:
            out.setdefault(known.name, FactAnchors(known.name, known.anchors))
        elif not any(b.name == text or find_any(toks, b.detect) for b in rules.age_bands):
            out.setdefault(text, FactAnchors(text, (phrase(text),)))
    return list(out.values())


def _known_condition(text: str, toks: Sequence[Tok], conditions: Sequence[Condition]) -> Condition | None:
    return next((c for c in conditions if c.name == text or find_any(toks, c.detect)), None)


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
