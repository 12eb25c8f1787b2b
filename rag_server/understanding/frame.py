"""The reading of a question: one immutable QueryFrame, made once per call by `understanding.reading.read`
and used by every RPC and every route (nothing downstream reads the question text again).

A frame holds what was asked (turn type, drugs with the words that named them and how they matched, the
section and the cue that asked for it, the asked terms as Vietnamese words and phrases with their
synonyms, the conditions named), who it is about (patient facts and the patient's groups, medications as
typed), the situation the question describes (an ingestion, a reaction, intent to harm), and what the
conversation's earlier turn carried into it. Offsets are character offsets into `query`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from rag_server.domain import Reason
from rag_server.text.normalize import fold
from rag_server.understanding.catalog import Mention
from rag_server.understanding.medications import MedicationName


class TurnType(StrEnum):
    SECTION_QUESTION = "section_question"
    DRUG_OVERVIEW = "drug_overview"
    FREE_FORM = "free_form"
    INDICATION_LOOKUP = "indication_lookup"
    PATIENT_ASSESSMENT = "patient_assessment"
    CLARIFY = "clarify"
    SMALLTALK = "smalltalk"
    OUT_OF_SCOPE = "out_of_scope"


class Group(StrEnum):
    """A group of patients the formulary gives (or does not give) its own text for."""

    INFANT = "infant"  # newborns and children under one year
    CHILD = "child"
    ELDERLY = "elderly"
    PREGNANT = "pregnant"
    BREASTFEEDING = "breastfeeding"
    RENAL = "renal_impairment"
    HEPATIC = "hepatic_impairment"


@dataclass(frozen=True)
class PatientFacts:
    current_medications: tuple[str, ...] = ()  # drug_ids, or names as typed
    conditions: tuple[str, ...] = ()  # canonical names (rules.toml conditions and age bands)
    age_years: int | None = None
    pregnant: bool = False
    breastfeeding: bool = False
    renal_impairment: bool = False
    hepatic_impairment: bool = False
    allergies: tuple[str, ...] = ()
    age_months: int | None = None  # when the age was given in months ("3 tháng tuổi")
    weight_kg: float | None = None
    groups: tuple[Group, ...] = ()  # the groups these facts put the patient in
    age_text: str = ""  # the words that stated the age ("6 tuần tuổi"), as typed

    @property
    def empty(self) -> bool:
        return not (
            self.current_medications
            or self.conditions
            or self.age_years is not None
            or self.age_months is not None
            or self.weight_kg is not None
            or self.pregnant
            or self.breastfeeding
            or self.renal_impairment
            or self.hepatic_impairment
            or self.allergies
        )

    @property
    def age_in_years(self) -> float | None:
        """The age in years, months counted as fractions (None when not stated)."""
        if self.age_months is not None:
            return self.age_months / 12.0
        return float(self.age_years) if self.age_years is not None else None


@dataclass(frozen=True)
class SectionCue:
    """The words that asked for a section: [start, end) in the question."""

    section_key: str
    text: str
    start: int
    end: int
    weak: bool = False  # a hint ("hằng ngày"), not a phrase of the section


@dataclass(frozen=True)
class AskedTerm:
    """A word or phrase the question asks about ("đau đầu"), with the forms that mean the same
    (vocabulary synonyms: "nhức đầu"); [start, end) in the question."""

    text: str
    forms: tuple[str, ...]
    start: int
    end: int
    known: bool = False  # a phrase of the clinical vocabulary (a medical term, a condition)

    @property
    def display(self) -> str:
        """How the service writes the term back: the vocabulary form with its diacritics when the question
        typed it without ("tang huyet ap" -> "tăng huyết áp"), else as typed."""
        plain = fold(self.text)
        if self.text != plain:
            return self.text
        return next((f for f in self.forms if f != plain and fold(f) == plain), self.text)


class SituationKind(StrEnum):
    NONE = "none"
    INGESTION = "ingestion"  # someone took or swallowed medicine, and it has happened
    REACTION = "reaction"  # a severe reaction happening now
    SELF_HARM = "self_harm"  # intent to harm oneself
    HARM = "harm"  # intent to harm someone else (refused)

    @property
    def emergency(self) -> bool:
        return self in (SituationKind.INGESTION, SituationKind.REACTION, SituationKind.SELF_HARM)


@dataclass(frozen=True)
class SituationPart:
    """One part of a situation as the question says it: `part` is its role (who, took, amount, happened,
    reaction_now, self_harm, harm, followup_reference), [start, end) in the question."""

    part: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Situation:
    kind: SituationKind = SituationKind.NONE
    parts: tuple[SituationPart, ...] = ()

    @property
    def emergency(self) -> bool:
        return self.kind.emergency

    def describe(self) -> str:
        """The parts seen, for a decision's detail ("who: bé 2 tuổi; took: nuốt; amount: 5 viên")."""
        return "; ".join(f"{p.part}: {p.text}" for p in self.parts)


@dataclass(frozen=True)
class Prior:
    """What the conversation's earlier turns tell the current one."""

    drug_ids: tuple[str, ...] = ()  # the drugs of the latest turn that named any
    section_key: str = ""  # the section of that turn
    clarifies: int = 0  # consecutive clarifications right before this turn
    turns: tuple[tuple[str, str], ...] = ()  # (role, text) of the earlier turns, oldest first


@dataclass(frozen=True)
class Carried:
    """What the frame took from the earlier turn (empty: nothing)."""

    drug_ids: tuple[str, ...] = ()
    section_key: str = ""

    def __bool__(self) -> bool:
        return bool(self.drug_ids or self.section_key)


@dataclass(frozen=True)
class QueryFrame:
    turn_type: TurnType
    query: str = ""
    drug_ids: tuple[str, ...] = ()
    section_key: str = ""
    indication: str = ""
    patient: PatientFacts = field(default_factory=PatientFacts)
    missing_fields: tuple[str, ...] = ()
    drug_mentions: tuple[Mention, ...] = ()  # how each drug name was matched
    section_cue: SectionCue | None = None
    asked_terms: tuple[AskedTerm, ...] = ()
    conditions: tuple[str, ...] = ()  # clinical conditions named (their formulary names)
    medications: tuple[MedicationName, ...] = ()  # the patient's current medicines, read as typed
    situation: Situation = field(default_factory=Situation)
    carried: Carried = field(default_factory=Carried)
    effect: AskedTerm | None = None  # "does X cause Y": Y
    search_text: str = ""  # the question without the names of the drugs asked about (+ formulary synonyms)
    loose: bool = False  # typed without any diacritics: words match by their folding alone
    section_prior: tuple[tuple[str, float], ...] = ()  # free-form cue phrases: section_key -> additive prior

    def but(self, **changes: object) -> QueryFrame:
        """A copy with `changes` (the frame itself never changes)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Reading:
    """A frame and, when it cannot be acted on as is, the reason (and its detail)."""

    frame: QueryFrame
    reason: Reason = Reason.UNSPECIFIED
    detail: str = ""

    @property
    def mentions(self) -> tuple[Mention, ...]:
        return self.frame.drug_mentions
