"""Load clinical.toml: generic words, condition synonyms, drug classes, medical terms, medication parsing.

Phrases are compiled once into `Phrases` sets (indexed by first word), so every lookup over a question or
an evidence text costs one pass over its words whatever the size of the vocabulary.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from rag_server.text.match import Phrase, Phrases, Tok, find_any, phrase, union
from rag_server.text.normalize import fold


@dataclass(frozen=True)
class ConditionSpec:
    """A condition as the formulary names it and as clinicians type it."""

    name: Phrase
    synonyms: Phrases

    @cached_property
    def forms(self) -> Phrases:
        return Phrases((self.name, *self.synonyms))


@dataclass(frozen=True)
class DrugClass:
    """A class of medicines as interaction text names it (`aliases`), and how membership is known."""

    name: str
    aliases: Phrases
    atc: tuple[str, ...]
    members: tuple[str, ...]  # INN spellings (matched through spelling variants)


@dataclass(frozen=True)
class MedicineWords:
    """Folded words of medicine names beyond the formulary (classes, members, ions) and of their forms."""

    names: frozenset[str]
    forms: frozenset[str]


@dataclass(frozen=True)
class MedicationRules:
    separators: Phrases
    strip: Phrases
    max_name_words: int
    salt_words: frozenset[str]  # folded
    ion_words: frozenset[str]  # folded


@dataclass(frozen=True)
class Calibration:
    """Made-up conditions whose best dense score over a corpus's chi_dinh chunks sets its dense floor."""

    template: str
    probes: tuple[str, ...]
    margin: float


@dataclass(frozen=True)
class ClinicalVocabulary:
    generic: Phrases
    qualifiers: Phrases
    conditions: tuple[ConditionSpec, ...]
    classes: tuple[DrugClass, ...]
    medical_terms: Phrases
    medication: MedicationRules
    calibration: Calibration = Calibration("{}", (), 0.0)
    terms: tuple[Phrases, ...] = ()  # groups of asked-term forms that mean the same
    short_names: tuple[tuple[Phrase, Phrase], ...] = ()  # (short name, the name it stands for): "MTX"

    @cached_property
    def condition_forms(self) -> Phrases:
        """Every condition name and synonym."""
        return Phrases(p for c in self.conditions for p in c.forms)

    @cached_property
    def generic_words(self) -> frozenset[str]:
        """Every folded word of the generic phrases."""
        return frozenset(w for p in self.generic for w in p.folded)

    @cached_property
    def class_aliases(self) -> Phrases:
        return Phrases(a for c in self.classes for a in c.aliases)

    def conditions_named(self, toks: list[Tok]) -> list[ConditionSpec]:
        """The conditions whose name or synonym occurs in the text, longest match first."""
        found = find_any(toks, self.condition_forms)
        return self._specs(found)

    def only_conditions(self, toks: list[Tok], fillers: Phrases) -> list[ConditionSpec]:
        """The conditions a text names when it names nothing else: besides condition names and synonyms
        only qualifiers ("mạn tính", "typ 2") and `fillers` (generic words, stopwords); else []."""
        ws = [t for t in toks if not t.is_punct]
        found = find_any(ws, self.condition_forms)
        covered = {j for i, p in found for j in range(i, i + len(p))}
        rest = [t for i, t in enumerate(ws) if i not in covered]
        rest_covered = {j for i, p in find_any(rest, union(self.qualifiers, fillers))
                        for j in range(i, i + len(p))}
        if any(i not in rest_covered and not t.folded.isdigit() for i, t in enumerate(rest)):
            return []
        return self._specs(found)

    @cached_property
    def _specs_of(self) -> dict[Phrase, tuple[ConditionSpec, ...]]:
        """Each form -> the conditions that list it, in vocabulary order."""
        owners: dict[Phrase, list[ConditionSpec]] = {}
        for spec in self.conditions:
            for form in spec.forms:
                if spec not in owners.setdefault(form, []):
                    owners[form].append(spec)
        return {form: tuple(specs) for form, specs in owners.items()}

    def _specs(self, found: list[tuple[int, Phrase]]) -> list[ConditionSpec]:
        out: list[ConditionSpec] = []
        for _, matched in sorted(found, key=lambda f: -len(f[1])):
            for spec in self._specs_of.get(matched, ()):
                if spec not in out:
                    out.append(spec)
        return out


def _phrases(values: Any) -> Phrases:
    return Phrases(phrase(str(v)) for v in values or [] if str(v).strip())


def _parse(data: dict[str, Any]) -> ClinicalVocabulary:
    conditions = tuple(
        ConditionSpec(phrase(str(c["name"])), _phrases(c.get("synonyms"))) for c in data.get("condition", [])
    )
    classes = tuple(
        DrugClass(
            name=str(c["name"]),
            aliases=_phrases([c["name"], *c.get("aliases", [])]),
            atc=tuple(str(a).upper() for a in c.get("atc", [])),
            members=tuple(str(m) for m in c.get("members", [])),
        )
        for c in data.get("drug_class", [])
    )
    med = data.get("medication", {})
    cal = data.get("calibration", {})
    return ClinicalVocabulary(
        generic=_phrases(data.get("generic", {}).get("words")),
        qualifiers=_phrases(data.get("qualifiers", {}).get("words")),
        conditions=conditions,
        classes=classes,
        medical_terms=_phrases(data.get("medical", {}).get("terms")),
        medication=MedicationRules(
            separators=_phrases(med.get("separators")),
            strip=_phrases(med.get("strip")),
            max_name_words=int(med.get("max_name_words", 4)),
            salt_words=frozenset(fold(str(w)) for w in med.get("salt_words", [])),
            ion_words=frozenset(fold(str(w)) for w in med.get("ion_words", [])),
        ),
        terms=tuple(_phrases(t.get("forms")) for t in data.get("term", []) if t.get("forms")),
        short_names=tuple(
            (phrase(str(short)), phrase(str(entry["name"])))
            for entry in data.get("short_name", [])
            for short in entry.get("short", [])
        ),
        calibration=Calibration(
            template=str(cal.get("template", "{}")),
            probes=tuple(str(p) for p in cal.get("probes", [])),
            margin=float(cal.get("margin", 0.0)),
        ),
    )


@lru_cache(maxsize=4)
def load_clinical(path: Path | None = None) -> ClinicalVocabulary:
    """The clinical vocabulary from `path`, or the bundled clinical.toml."""
    if path is None:
        text = resources.files("rag_server.vocabulary").joinpath("clinical.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    return _parse(tomllib.loads(text))
