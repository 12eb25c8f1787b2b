"""Load rules.toml: the phrasings the deterministic understanding layer reads."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from rag_server.text.match import Phrase, Phrases, phrase

SLOT = "{x}"


@dataclass(frozen=True)
class Template:
    """An indication phrasing: literal words before and after the {x} slot."""

    text: str
    before: Phrase
    after: Phrase

    @property
    def size(self) -> int:
        return len(self.before) + len(self.after)


@dataclass(frozen=True)
class Condition:
    name: str
    flag: str
    detect: tuple[Phrase, ...]
    anchors: tuple[Phrase, ...]


@dataclass(frozen=True)
class AgeBand:
    name: str
    min_years: int
    max_years: int
    detect: tuple[Phrase, ...]
    anchors: tuple[Phrase, ...]
    group: str = ""  # rag_server.understanding.frame.Group value

    def contains(self, years: int) -> bool:
        return self.min_years <= years <= self.max_years


@dataclass(frozen=True)
class AgePattern:
    """An age in a question's folded words: the first group is the number, in `unit`."""

    pattern: re.Pattern[str]
    unit: str  # "years" | "months" | "weeks"


@dataclass(frozen=True)
class GroupWords:
    """How a formulary section speaks of a patient group (rules.toml [[group]])."""

    name: str  # understanding.frame.Group value
    anchors: Phrases
    bounds: bool  # its sentences may give age or weight bounds


@dataclass(frozen=True)
class BoundWords:
    """How a formulary sentence bounds a dose by age or weight (rules.toml [bounds])."""

    at_least: Phrases
    below: Phrases
    to: Phrases
    years: Phrases
    months: Phrases
    kilograms: Phrases


@dataclass(frozen=True)
class SectionPrior:
    """A free-form cue and the sections it favours."""

    cues: tuple[Phrase, ...]
    sections: tuple[str, ...]


@dataclass(frozen=True)
class Synonym:
    """A colloquial phrase and the formulary terms its evidence may carry instead (Language.forms_of)."""

    phrase: Phrase
    terms: tuple[str, ...]


@dataclass(frozen=True)
class Rules:
    greetings: tuple[Phrase, ...]
    followup: tuple[Phrase, ...]
    second_medicine: tuple[Phrase, ...]
    comparison: tuple[Phrase, ...]
    reference: tuple[Phrase, ...]
    smalltalk_fillers: tuple[Phrase, ...]
    non_human: tuple[Phrase, ...]
    medicine_use: Phrases
    human_context: tuple[Phrase, ...]
    templates: tuple[Template, ...]
    leading_fillers: tuple[Phrase, ...]
    trailing_fillers: tuple[Phrase, ...]
    generic_heads: tuple[Phrase, ...]
    current_medication_triggers: tuple[Phrase, ...]
    prescribed_triggers: tuple[Phrase, ...]
    connectors: tuple[Phrase, ...]
    medication_list_ends: tuple[Phrase, ...]
    pregnant: tuple[Phrase, ...]
    pregnancy_anchors: tuple[Phrase, ...]
    breastfeeding: tuple[Phrase, ...]
    breastfeeding_anchors: tuple[Phrase, ...]
    age_patterns: tuple[AgePattern, ...]
    weight_pattern: re.Pattern[str]
    pregnancy_pattern: re.Pattern[str]
    breastfeeding_pattern: re.Pattern[str]
    age_bands: tuple[AgeBand, ...]
    conditions: tuple[Condition, ...]
    overview_fillers: tuple[Phrase, ...]
    stopwords: frozenset[str]  # folded
    english_words: frozenset[str]  # folded: everyday English, never an unknown drug name
    generic_name_words: frozenset[str] = frozenset()  # folded
    name_conjunctions: tuple[Phrase, ...] = ()
    synonyms: tuple[Synonym, ...] = ()
    priors: tuple[SectionPrior, ...] = ()
    prior_weight: float = 0.0
    effect_markers: tuple[Phrase, ...] = ()
    effect_followers: tuple[Phrase, ...] = ()  # after a condition: it is an effect asked about ("có phải do")
    effect_joins: tuple[Phrase, ...] = ()  # join effects in one list after a marker ("gây X hoặc Y")
    state_words: tuple[Phrase, ...] = ()  # words before a condition that make it the patient's state
    names_a_medicine: tuple[Phrase, ...] = ()  # words that present an unknown word as a medicine
    durations: tuple[Phrase, ...] = ()  # words after a number saying how long it is taken
    stopword_phrases: Phrases = field(default_factory=Phrases)  # stopwords with their accents
    abbreviations: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # "ko" -> không
    # read otherwise right before a unit: "bn mg" is "bao nhiêu mg", "bn" alone "bệnh nhân"
    abbreviations_before_unit: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    abbreviation_units: frozenset[str] = frozenset()
    effect_cues: Phrases = field(default_factory=Phrases)  # "có gây": the effect asked about follows
    weak_effect_cues: Phrases = field(default_factory=Phrases)  # "có bị": a vocabulary effect follows
    condition_cues: Phrases = field(default_factory=Phrases)  # "đang bị": what the patient has, no effect
    effect_links: Phrases = field(default_factory=Phrases)  # "khi": a weak cue before the drug is its effect
    list_separators: Phrases = field(default_factory=Phrases)  # "," "và" "hay": effects listed together
    effect_after: Phrases = field(default_factory=Phrases)  # "có phải do": the effect came before
    # "Hiconcil, vậy là amoxicilin hả": one name asked to be another (the brand names section)
    name_identity: Phrases = field(default_factory=Phrases)
    dose_asked: Phrases = field(default_factory=Phrases)
    same_name: Phrases = field(default_factory=Phrases)
    question_fillers: Phrases = field(default_factory=Phrases)  # never an asked term
    groups: tuple[GroupWords, ...] = ()
    bounds: BoundWords | None = None

    @cached_property
    def any_effect_cue(self) -> Phrases:
        """Every effect cue, strong or weak ("có gây", "có làm")."""
        return Phrases((*self.effect_cues, *self.weak_effect_cues))

    @cached_property
    def condition_detects(self) -> tuple[Phrases, dict[int, tuple[int, ...]]]:
        """Every condition's detect phrases as one indexed set, and for each phrase (by identity) the
        conditions (indices into `conditions`) that list it: one pass over a question finds them all."""
        owners: dict[int, list[int]] = {}
        for k, cond in enumerate(self.conditions):
            for pat in cond.detect:
                owners.setdefault(id(pat), []).append(k)
        every = Phrases(p for c in self.conditions for p in c.detect)
        return every, {key: tuple(v) for key, v in owners.items()}

    @cached_property
    def condition_phrases(self) -> tuple[Phrase, ...]:
        """Every phrasing of a condition, longest first: after "thuốc" it names a medicine's class ("đang
        uống thuốc gút probenecid")."""
        found = {p.folded: p for c in self.conditions for p in c.detect}
        return tuple(sorted(found.values(), key=len, reverse=True))

    def words(self) -> frozenset[str]:
        """Every folded word the rules mention (never read as a drug name)."""
        phrases: list[Phrase] = [
            *self.greetings,
            *self.smalltalk_fillers,
            *self.followup,
            *self.second_medicine,
            *self.comparison,
            *self.reference,
            *self.non_human,
            *self.human_context,
            *self.leading_fillers,
            *self.trailing_fillers,
            *self.generic_heads,
            *self.current_medication_triggers,
            *self.prescribed_triggers,
            *self.connectors,
            *self.effect_markers,
            *self.pregnant,
            *self.pregnancy_anchors,
            *self.breastfeeding,
            *self.breastfeeding_anchors,
            *self.overview_fillers,
            *self.question_fillers,
        ]
        phrases += [p for t in self.templates for p in (t.before, t.after)]
        phrases += [p for c in self.conditions for p in (*c.detect, *c.anchors)]
        phrases += [p for b in self.age_bands for p in (*b.detect, *b.anchors)]
        return frozenset(w for p in phrases for w in p.folded) | self.stopwords | self.english_words


def _phrases(values: Any) -> Phrases:
    return Phrases(phrase(str(v)) for v in values or [])


def _template(text: str) -> Template:
    if text.count(SLOT) != 1:
        raise ValueError(f"indication template needs exactly one {SLOT}: {text!r}")
    before, after = text.split(SLOT)
    return Template(text, phrase(before), phrase(after))


def _age_pattern(raw: Any) -> AgePattern:
    unit = str(raw["unit"])
    if unit not in ("years", "months", "weeks"):
        raise ValueError(f"age pattern unit must be years, months or weeks: {unit!r}")
    return AgePattern(re.compile(str(raw["pattern"])), unit)


def _parse(data: dict[str, Any]) -> Rules:
    patient = data["patient"]
    names = data.get("names", {})
    free_form = data.get("free_form", {})
    templates = sorted((_template(t) for t in data["indication"]["templates"]), key=lambda t: -t.size)
    return Rules(
        greetings=_phrases(data["smalltalk"]["greetings"]),
        followup=_phrases(data["conversation"]["followup"]),
        second_medicine=_phrases(data["conversation"].get("second_medicine")),
        comparison=_phrases(data["conversation"].get("comparison")),
        names_a_medicine=_phrases(data["conversation"].get("names_a_medicine")),
        reference=_phrases(data["conversation"].get("reference")),
        smalltalk_fillers=_phrases(data["smalltalk"]["fillers"]),
        non_human=_phrases(data["scope"]["non_human"]),
        medicine_use=_phrases(data["scope"].get("medicine_use")),
        human_context=_phrases(data["scope"]["human_context"]),
        templates=tuple(templates),
        leading_fillers=_phrases(data["indication"]["leading_fillers"]),
        trailing_fillers=_phrases(data["indication"]["trailing_fillers"]),
        generic_heads=_phrases(data["indication"]["generic_heads"]),
        current_medication_triggers=_phrases(patient["current_medication_triggers"]),
        prescribed_triggers=_phrases(patient.get("prescribed_triggers")),
        connectors=_phrases(patient["connectors"]),
        medication_list_ends=_phrases(patient.get("medication_list_ends")),
        pregnant=_phrases(patient["pregnant"]),
        pregnancy_anchors=_phrases(patient["pregnancy_anchors"]),
        breastfeeding=_phrases(patient["breastfeeding"]),
        breastfeeding_anchors=_phrases(patient["breastfeeding_anchors"]),
        age_patterns=tuple(_age_pattern(a) for a in patient["age_patterns"]),
        weight_pattern=re.compile(str(patient["weight_pattern"])),
        pregnancy_pattern=re.compile(str(patient.get("pregnancy_pattern", r"(?!x)x"))),
        breastfeeding_pattern=re.compile(str(patient.get("breastfeeding_pattern", r"(?!x)x"))),
        age_bands=tuple(
            AgeBand(
                str(b["name"]),
                int(b.get("min_years", 0)),
                int(b.get("max_years", 200)),
                _phrases(b.get("detect")),
                _phrases(b.get("anchors")),
                str(b.get("group", "")),
            )
            for b in patient.get("age_band", [])
        ),
        conditions=tuple(
            Condition(
                str(c["name"]), str(c.get("flag", "")), _phrases(c.get("detect")), _phrases(c.get("anchors"))
            )
            for c in patient.get("condition", [])
        ),
        overview_fillers=_phrases(data["overview"]["fillers"]),
        stopwords=frozenset(f for p in _phrases(data["lexical"]["stopwords"]) for f in p.folded),
        english_words=frozenset(f for p in _phrases(data["lexical"].get("english_words")) for f in p.folded),
        generic_name_words=frozenset(f for p in _phrases(names.get("generic_words")) for f in p.folded),
        name_conjunctions=_phrases(names.get("conjunctions")),
        synonyms=tuple(
            Synonym(phrase(str(key)), tuple(str(t) for t in terms))
            for key, terms in free_form.get("synonyms", {}).items()
        ),
        priors=tuple(
            SectionPrior(_phrases(p.get("cues")), tuple(str(k) for k in p.get("sections", [])))
            for p in free_form.get("prior", [])
        ),
        prior_weight=float(free_form.get("prior_weight", 0.0)),
        effect_markers=_phrases(patient.get("effect_markers")),
        effect_followers=_phrases(patient.get("effect_followers")),
        effect_joins=_phrases(patient.get("effect_joins")),
        state_words=_phrases(patient.get("state_words")),
        durations=_phrases(patient.get("durations")),
        stopword_phrases=_phrases(data["lexical"]["stopwords"]),
        effect_cues=_phrases(data.get("question", {}).get("effect_cues")),
        weak_effect_cues=_phrases(data.get("question", {}).get("weak_effect_cues")),
        condition_cues=_phrases(data.get("question", {}).get("condition_cues")),
        effect_links=_phrases(data.get("question", {}).get("effect_links")),
        list_separators=_phrases(data.get("question", {}).get("list_separators")),
        effect_after=_phrases(data.get("question", {}).get("effect_after")),
        name_identity=_phrases(data.get("question", {}).get("name_identity")),
        dose_asked=_phrases(data.get("question", {}).get("dose_asked")),
        same_name=_phrases(data.get("question", {}).get("same_name")),
        question_fillers=_phrases(data.get("question", {}).get("fillers")),
        bounds=BoundWords(**{k: _phrases(v) for k, v in data["bounds"].items()}),
        groups=tuple(GroupWords(str(g["name"]), _phrases(g.get("anchors")), bool(g.get("bounds", False)))
                     for g in data.get("group", [])),
        abbreviations={
            str(k).lower(): tuple(zip(phrase(str(v)).raw, phrase(str(v)).folded, strict=True))
            for k, v in data.get("chat", {}).get("abbreviations", {}).items()
        },
        abbreviations_before_unit={
            str(k).lower(): tuple(zip(phrase(str(v)).raw, phrase(str(v)).folded, strict=True))
            for k, v in data.get("chat", {}).get("before_unit", {}).items()
        },
        abbreviation_units=frozenset(str(u).lower() for u in data.get("chat", {}).get("units", [])),
    )


@lru_cache(maxsize=4)
def load_rules(path: Path | None = None) -> Rules:
    if path is None:
        text = resources.files("rag_server.vocabulary").joinpath("rules.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    return _parse(tomllib.loads(text))
