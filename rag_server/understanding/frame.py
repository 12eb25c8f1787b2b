"""The deterministic QueryFrame builder (no LLM): question -> turn type, drugs, section, indication,
patient facts, missing fields, and (when the frame cannot be acted on) a decision reason.

Order: scope guard -> drug names (catalog) -> section phrase on the question with the drug names
removed (so a name containing a section word cannot select a section) -> patient facts -> turn type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from rag_server.domain import Reason
from rag_server.text.match import Phrase, Tok, find_any, match_at, text_of, tokenize, words
from rag_server.understanding.catalog import Catalog, MatchStage, Mention
from rag_server.understanding.lexicon import drug_like_words
from rag_server.understanding.patient import PatientFacts, extract_patient
from rag_server.understanding.scope import looks_non_human, medical_terms, only_generic
from rag_server.vocabulary.language import Language
from rag_server.vocabulary.rules import Rules, Template

# Sections a patient fact can also name ("bà bầu" is a pregnancy fact and the pregnancy section).
_FACT_SECTIONS = {"thoi_ky_mang_thai": "pregnant", "thoi_ky_cho_con_bu": "breastfeeding"}
_DRUG_PLACEHOLDER = "zzdrugzz"


class TurnType(StrEnum):
    SECTION_QUESTION = "section_question"
    DRUG_OVERVIEW = "drug_overview"
    FREE_FORM = "free_form"
    INDICATION_LOOKUP = "indication_lookup"
    PATIENT_ASSESSMENT = "patient_assessment"
    CLARIFY = "clarify"
    SMALLTALK = "smalltalk"
    OUT_OF_SCOPE = "out_of_scope"


@dataclass
class QueryFrame:
    turn_type: TurnType
    query: str = ""
    drug_ids: list[str] = field(default_factory=list)
    section_key: str = ""
    indication: str = ""
    patient: PatientFacts = field(default_factory=PatientFacts)
    missing_fields: list[str] = field(default_factory=list)
    drug_mentions: list[Mention] = field(default_factory=list)  # how each drug name was matched


@dataclass
class Understanding:
    frame: QueryFrame
    reason: Reason = Reason.UNSPECIFIED  # set when the frame cannot be acted on as is
    detail: str = ""
    mentions: list[Mention] = field(default_factory=list)


def is_smalltalk(toks: Sequence[Tok], rules: Rules) -> bool:
    greet = find_any(toks, rules.greetings)
    if not greet:
        return False
    rest = _remove(
        words(toks),
        [(i, len(p)) for i, p in find_any(words(toks), [*rules.greetings, *rules.smalltalk_fillers])],
    )
    return not rest


def _remove(toks: Sequence[Tok], spans: Sequence[tuple[int, int]]) -> list[Tok]:
    drop = {j for start, n in spans for j in range(start, start + n)}
    return [t for i, t in enumerate(toks) if i not in drop]


def _strip_ends(toks: list[Tok], rules: Rules) -> list[Tok]:
    changed = True
    while toks and changed:
        changed = False
        while toks and toks[0].is_punct:
            toks, changed = toks[1:], True
        while toks and toks[-1].is_punct:
            toks, changed = toks[:-1], True
        for p in sorted(rules.leading_fillers, key=lambda p: -len(p)):
            if len(toks) > len(p) and match_at(toks, 0, p):
                toks, changed = toks[len(p) :], True
                break
        for p in sorted(rules.trailing_fillers, key=lambda p: -len(p)):
            if len(toks) > len(p) and match_at(toks, len(toks) - len(p), p):
                toks, changed = toks[: len(toks) - len(p)], True
                break
    return toks


def extract_indication(toks: Sequence[Tok], rules: Rules) -> str:
    """The {x} of the longest matching indication template, or ""."""
    where: dict[str, list[int]] = {}
    for i, tok in enumerate(toks):
        where.setdefault(tok.folded, []).append(i)
    for tpl in rules.templates:
        slot = _match_template(toks, tpl, where)
        if slot is None:
            continue
        cleaned = _strip_ends(list(slot), rules)
        text = text_of(cleaned)
        if text:
            return text
    return ""


def _find(toks: Sequence[Tok], pat: Phrase, where: dict[str, list[int]]) -> list[int]:
    """find() through a question's word positions (one dict lookup instead of a scan per template)."""
    if not len(pat):
        return []
    return [i for i in where.get(pat.folded[0], ()) if match_at(toks, i, pat)]


def _match_template(toks: Sequence[Tok], tpl: Template, where: dict[str, list[int]]) -> Sequence[Tok] | None:
    if len(tpl.before):
        for i in _find(toks, tpl.before, where):
            start = i + len(tpl.before)
            if len(tpl.after):
                ends = [j for j in _find(toks, tpl.after, where) if j > start]
                if ends:
                    return toks[start : ends[0]]
            else:
                return _clause(toks[start:])
        return None
    ends = _find(toks, tpl.after, where)
    if not ends:
        return None
    head = toks[: ends[0]]
    cut = max((i for i, t in enumerate(head) if t.raw in {"?", "!", ";"}), default=-1)
    return head[cut + 1 :]


def _clause(toks: Sequence[Tok]) -> Sequence[Tok]:
    """Up to the end of the sentence ("." is not an end: "H. pylori")."""
    for i, t in enumerate(toks):
        if t.raw in {"?", "!", ";"}:
            return toks[:i]
    return toks


def strip_indication_head(text: str, rules: Rules) -> str:
    """ "bệnh gút mạn" -> "gút mạn" (a generic head word goes when two or more words remain)."""
    toks = words(tokenize(text))
    for head in rules.generic_heads:
        if len(toks) - len(head) >= 2 and match_at(toks, 0, head):
            return text_of(toks[len(head) :])
    return text_of(toks)


def build_frame(query: str, catalog: Catalog | None, language: Language) -> Understanding:
    vocabulary, rules = language.vocabulary, language.rules
    toks = tokenize(query)[:MAX_QUESTION_TOKENS]
    frame = QueryFrame(turn_type=TurnType.FREE_FORM, query=query)
    if looks_non_human(toks, rules):
        frame.turn_type = TurnType.OUT_OF_SCOPE
        return Understanding(frame, Reason.OUT_OF_SCOPE)

    mentions = catalog.find(toks) if catalog is not None else []
    without_drugs = _masked(toks, mentions)
    # Drug names are removed before the section phrase is looked for ("Bảo Quản Linh" names a drug).
    section = vocabulary.resolve_section(" ".join(t.raw for t in without_drugs if t.raw != _DRUG_PLACEHOLDER))
    if any(m.stage == MatchStage.PREFIX for m in mentions) and not (
        section is not None
        or _bare_name(without_drugs, rules)
        or medical_terms(toks, language)
        or not extract_patient(toks, mentions, rules).facts.empty
    ):
        # A prefix ("drop" of a brand "Droplie") names a drug only in a question about medicine.
        mentions = [m for m in mentions if m.stage != MatchStage.PREFIX]
        without_drugs = _masked(toks, mentions)
    ambiguous = [m for m in mentions if m.ambiguous]
    frame.drug_mentions = list(mentions)
    reading = extract_patient(toks, mentions, rules)
    facts = reading.facts
    if section is not None and section.weak and (not mentions or not facts.empty):
        section = None  # a weak cue ("hằng ngày") neither asks for a drug nor outweighs patient facts
    frame.patient = facts
    if section is not None:
        frame.section_key = section.section_key

    if ambiguous:
        frame.turn_type = TurnType.CLARIFY
        frame.drug_ids = sorted({d for m in ambiguous for d in m.drug_ids})
        frame.missing_fields = ["drug_id"]
        detail = "; ".join(
            f"'{m.text}': " + " | ".join(catalog.display_name(d) if catalog else d for d in m.drug_ids)
            for m in ambiguous
        )
        return Understanding(frame, Reason.AMBIGUOUS_DRUG, detail, mentions)

    current = set(reading.current_mentions)
    candidates = [d for i, m in enumerate(mentions) if i not in current for d in m.drug_ids]
    if not candidates and current:  # "đang dùng X thì cần lưu ý gì": X is the drug asked about
        candidates = [d for m in mentions for d in m.drug_ids]
        facts.current_medications = []
    frame.drug_ids = list(dict.fromkeys(candidates))

    if not frame.drug_ids:
        if is_smalltalk(toks, rules):
            frame.turn_type = TurnType.SMALLTALK
            return Understanding(frame, Reason.SMALLTALK, mentions=mentions)
        indication = extract_indication(without_drugs, rules)
        if indication:
            frame.turn_type = TurnType.INDICATION_LOOKUP
            frame.indication = indication
            frame.section_key = ""
            return Understanding(frame, mentions=mentions)
        unknown = drug_like_words(toks, language.known_words)
        named = section is not None or not facts.empty or _bare_name(_mask(toks, unknown), rules)
        if unknown and len(unknown) <= MAX_UNKNOWN_NAMES and named:
            # "liều của semaglutid": a drug is named, just not one the formulary has.
            frame.turn_type = TurnType.SECTION_QUESTION if section is not None else TurnType.FREE_FORM
            frame.missing_fields = ["drug_id"]
            return Understanding(frame, Reason.DRUG_NOT_FOUND, _echo(unknown), mentions)
        if section is not None or not facts.empty:
            frame.turn_type = TurnType.CLARIFY
            frame.missing_fields = ["drug_id"]
            return Understanding(frame, Reason.MISSING_REQUIRED_FIELD, "tên thuốc", mentions)
        if medical_terms(toks, language):
            frame.turn_type = TurnType.FREE_FORM  # a medical question naming no drug: corpus search
            return Understanding(frame, mentions=mentions)
        if only_generic(toks, language) and any(t.folded.isalpha() for t in toks):
            frame.turn_type = TurnType.CLARIFY  # "thuốc gì", "người lớn": which drug or condition?
            frame.missing_fields = ["drug_id", "indication"]
            return Understanding(
                frame, Reason.MISSING_REQUIRED_FIELD, "tên thuốc hoặc bệnh", mentions
            )
        frame.turn_type = TurnType.OUT_OF_SCOPE  # nothing medical to look up: never searched
        return Understanding(frame, Reason.OUT_OF_SCOPE, mentions=mentions)

    if _patient_turn(facts, frame.section_key):
        frame.turn_type = TurnType.PATIENT_ASSESSMENT
    elif section is not None:
        frame.turn_type = TurnType.SECTION_QUESTION
    elif _bare_name(without_drugs, rules):
        frame.turn_type = TurnType.DRUG_OVERVIEW
    else:
        frame.turn_type = TurnType.FREE_FORM
    return Understanding(frame, mentions=mentions)


MAX_QUESTION_TOKENS = 480  # words and marks read of a question (2,000 characters of prose is ~400 words)
MAX_UNKNOWN_NAMES = 2  # more unknown Latin words than this is prose in another language, not drug names
MAX_ECHO_CHARS = 40  # a word echoed back in a decision message is cut to this


def _echo(names: Sequence[str]) -> str:
    return ", ".join(n if len(n) <= MAX_ECHO_CHARS else n[: MAX_ECHO_CHARS - 1] + "…" for n in names[:3])


def _patient_turn(facts: PatientFacts, section_key: str) -> bool:
    """Patient facts beyond what an explicit section word already asks for make an assessment turn."""
    if facts.empty:
        return False
    if not section_key:
        return True
    if section_key not in _FACT_SECTIONS:
        return False  # an explicit section word wins ("liều ... cho người suy thận")
    implied = _FACT_SECTIONS[section_key]
    others = PatientFacts(**{**facts.__dict__, implied: False})
    return not others.empty


def _masked(toks: Sequence[Tok], mentions: Sequence[Mention]) -> list[Tok]:
    return [
        Tok(_DRUG_PLACEHOLDER, _DRUG_PLACEHOLDER, t.start, t.end)
        if any(m.start <= i < m.end for m in mentions)
        else t
        for i, t in enumerate(toks)
    ]


def _mask(toks: Sequence[Tok], names: Sequence[str]) -> list[Tok]:
    return [Tok(_DRUG_PLACEHOLDER, _DRUG_PLACEHOLDER, t.start, t.end) if t.raw in names else t for t in toks]


def _bare_name(toks: Sequence[Tok], rules: Rules) -> bool:
    rest = [t for t in words(toks) if t.raw != _DRUG_PLACEHOLDER]
    spans = [(i, len(p)) for i, p in find_any(rest, rules.overview_fillers)]
    return not _remove(rest, spans)
