"""situation.toml: the parts of the situations a question may describe, and the part sets that make each
situation (understanding/situation.py composes them by one rule)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from rag_server.text.match import Phrase, Phrases, phrase


@dataclass(frozen=True)
class SituationRule:
    kind: str  # frame.SituationKind value
    requires: tuple[frozenset[str], ...]  # any one set, all its parts present
    vetoes: frozenset[str]  # none of these parts present, ever
    blockers: frozenset[str]  # none of these parts present ...
    overrides: frozenset[str]  # ... unless one of these is
    veto_yields: tuple[tuple[str, frozenset[str]], ...] = ()  # a veto that does not apply beside these

    def vetoed(self, present: set[str]) -> bool:
        yields = dict(self.veto_yields)
        return any(not (present & yields.get(v, frozenset())) for v in present & self.vetoes)


@dataclass(frozen=True)
class Combo:
    """A part said in two pieces: a `first` phrase, then a `then` phrase at most `max_gap` words later."""

    part: str
    first: Phrases
    then: Phrases
    max_gap: int


@dataclass(frozen=True)
class SituationVocabulary:
    parts: dict[str, Phrases]  # part name -> its phrases
    combos: tuple[Combo, ...]
    units: Phrases  # amount units ("viên", "tablets")
    pack_units: Phrases  # containers: one of them is already many ("2 vỉ")
    numbers: tuple[tuple[Phrase, int], ...]  # number words and their values
    multipliers: tuple[tuple[Phrase, int], ...]  # "mươi", "chục", "trăm"
    many_from: int
    english: frozenset[str]  # words that make an ASCII question English
    rules: tuple[SituationRule, ...]
    vietnamese_only: frozenset[str] = frozenset()  # bare Vietnamese words that are English in English
    # a number after these names a kind, no count: "type 2", "độ 3"
    number_labels: Phrases = field(default_factory=lambda: Phrases(()))
    # phrases whose words are no part: "chút xíu" (a little) is no "xỉu"
    inert: Phrases = field(default_factory=lambda: Phrases(()))
    # a strength between a count and its unit: "twenty 500 mg tablets", "10 viên 500mg" reads past it
    strength_units: frozenset[str] = frozenset()
    # a past calendar year after one of these words ("năm 2016") is the part `past_year_part`
    past_year_before: Phrases = field(default_factory=lambda: Phrases(()))
    past_year_part: str = ""


def _phrases(values: Any, where: str) -> Phrases:
    if not isinstance(values, list):
        raise ValueError(f"situation.toml: {where} must be a list of phrases")
    return Phrases(dict.fromkeys(phrase(str(v)) for v in values if str(v).strip()))


def _valued(table: Any) -> tuple[tuple[Phrase, int], ...]:
    return tuple((phrase(str(k)), int(v)) for k, v in dict(table or {}).items())


def _parse(data: dict[str, Any]) -> SituationVocabulary:
    raw_parts = dict(data["parts"])
    units = _phrases(raw_parts.pop("units"), "parts.units")
    pack_units = _phrases(data.get("pack_units", []), "pack_units")
    parts = {name: _phrases(values, f"parts.{name}") for name, values in raw_parts.items()}
    def side(c: dict[str, Any], name: str) -> Phrases:
        """A combo's `first` / `then` phrases, or those of a part it names (`then_part = "harm_outcome"`)."""
        if f"{name}_part" in c:
            part = str(c[f"{name}_part"])
            if part not in parts:
                raise ValueError(f"situation.toml: combo {c['part']!r} names an unknown part {part!r}")
            return parts[part]
        return _phrases(c[name], f"combo.{name}")

    combos = tuple(
        Combo(str(c["part"]), side(c, "first"), side(c, "then"), int(c.get("max_gap", 2)))
        for c in data.get("combo", [])
    )
    known = {*parts, *(c.part for c in combos), "amount", "many"}
    rules: list[SituationRule] = []
    for raw in data["situation"]:
        rule = SituationRule(
            kind=str(raw["kind"]),
            requires=tuple(frozenset(str(p) for p in group) for group in raw["requires"]),
            vetoes=frozenset(str(p) for p in raw.get("vetoes", [])),
            blockers=frozenset(str(p) for p in raw.get("blockers", [])),
            overrides=frozenset(str(p) for p in raw.get("overrides_blockers", [])),
            veto_yields=tuple(
                (str(v), frozenset(str(p) for p in ps)) for v, ps in raw.get("veto_yields", {}).items()
            ),
        )
        unknown = {p for group in rule.requires for p in group} | rule.vetoes | rule.blockers | rule.overrides
        unknown |= {p for v, ps in rule.veto_yields for p in (v, *ps)}
        if unknown - known:
            raise ValueError(f"situation.toml: unknown part(s) {sorted(unknown - known)} in {rule.kind}")
        rules.append(rule)
    past_year = data.get("past_year", {})
    if past_year and str(past_year.get("part", "")) not in known:
        raise ValueError(f"situation.toml: unknown part {past_year.get('part')!r} in [past_year]")
    language = data.get("language", {})
    english = frozenset(str(w).lower() for w in language.get("english", []))
    vietnamese_only = frozenset(str(w).lower() for w in language.get("vietnamese_only", []))
    return SituationVocabulary(
        parts, combos, units, pack_units, _valued(data.get("numbers")), _valued(data.get("multipliers")),
        int(data.get("many_from", 3)), english, tuple(rules), vietnamese_only,
        _phrases(data.get("number_labels", []), "number_labels"), _phrases(data.get("inert", []), "inert"),
        frozenset(str(u).lower() for u in data.get("strength_units", [])),
        _phrases(past_year.get("before", []), "past_year.before"), str(past_year.get("part", "")),
    )


@lru_cache(maxsize=4)
def load_situation(path: Path | None = None) -> SituationVocabulary:
    """The situation vocabulary from `path`, or the bundled situation.toml."""
    if path is None:
        text = resources.files("rag_server.vocabulary").joinpath("situation.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    return _parse(tomllib.loads(text))
