"""Load sections.toml and answer the two questions asked of it:

* `heading_key(text)`: which section does this heading (as printed, with spelling slips) start?
* `resolve_section(question)`: which section does this question ask for? (longest phrase wins;
  no match is not a guess: None).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from rag_server.text.normalize import fold, phrase_positions, tokens


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    order: int
    aliases: tuple[str, ...]
    phrases: tuple[str, ...]


@dataclass(frozen=True)
class PhraseMatch:
    section_key: str
    phrase: str
    position: int


@dataclass
class Vocabulary:
    sections: dict[str, SectionSpec]
    intro_sections: tuple[str, ...]
    identity_sections: tuple[str, ...]
    _headings: dict[str, str] = field(default_factory=dict)
    _phrases: list[tuple[list[str], str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for spec in self.sections.values():
            for text in (spec.title, *spec.aliases):
                self._headings.setdefault(_heading_form(text), spec.key)
        entries: list[tuple[list[str], str, str]] = []
        for spec in self.sections.values():
            for phrase in {spec.title, *spec.phrases}:
                toks = tokens(phrase)
                if toks:
                    entries.append((toks, spec.key, phrase))
        # Longest phrase first (in tokens, then characters); ties keep book order.
        entries.sort(key=lambda e: (-len(e[0]), -len(" ".join(e[0])), self.sections[e[1]].order))
        self._phrases = entries

    @property
    def keys(self) -> list[str]:
        return sorted(self.sections, key=lambda k: self.sections[k].order)

    def order(self, section_key: str) -> int:
        spec = self.sections.get(section_key)
        return spec.order if spec else len(self.sections) + 1

    def title(self, section_key: str) -> str:
        spec = self.sections.get(section_key)
        return spec.title if spec else section_key

    def heading_key(self, heading: str) -> str | None:
        """Section key of a printed heading, tolerant of case, accents, trailing colons and OCR slips."""
        return self._headings.get(_heading_form(heading))

    def resolve_section(self, question: str) -> PhraseMatch | None:
        """Longest phrase across all sections that occurs in the question; None when nothing matches."""
        q_tokens = tokens(question)
        for phrase_tokens, key, phrase in self._phrases:
            hits = phrase_positions(phrase_tokens, q_tokens)
            if hits:
                return PhraseMatch(section_key=key, phrase=phrase, position=hits[0])
        return None

    def strip_phrase(self, question: str, match: PhraseMatch) -> list[str]:
        """Question tokens with the matched section phrase removed (what is left names the drug)."""
        q_tokens = tokens(question)
        n = len(tokens(match.phrase))
        return q_tokens[: match.position] + q_tokens[match.position + n :]


# OCR slips seen in the book: "qui" for "quy", "Ouá" for "Quá".
_SLIPS = {"qui": "quy", "ki": "ky", "oua": "qua"}


def _heading_form(text: str) -> str:
    words = tokens(text)
    return " ".join(_SLIPS.get(w, w) for w in words)


def _parse(data: dict[str, object]) -> Vocabulary:
    raw_sections = data["section"]
    assert isinstance(raw_sections, list)
    sections: dict[str, SectionSpec] = {}
    for order, raw in enumerate(raw_sections):
        key = str(raw["key"])
        if key != "_".join(tokens(key)) or key in sections:
            raise ValueError(f"bad or duplicate section key {key!r}")
        sections[key] = SectionSpec(
            key=key,
            title=str(raw["title"]),
            order=order,
            aliases=tuple(str(a) for a in raw.get("aliases", [])),
            phrases=tuple(str(p) for p in raw.get("phrases", [])),
        )
    intro = tuple(str(k) for k in data.get("intro_sections", []))  # type: ignore[attr-defined]
    identity = tuple(str(k) for k in data.get("identity_sections", []))  # type: ignore[attr-defined]
    for key in (*intro, *identity):
        if key not in sections:
            raise ValueError(f"intro/identity section {key!r} is not a declared section")
    return Vocabulary(sections=sections, intro_sections=intro, identity_sections=identity)


@lru_cache(maxsize=4)
def load_vocabulary(path: Path | None = None) -> Vocabulary:
    """The vocabulary from `path`, or the bundled sections.toml."""
    if path is None:
        text = resources.files("rag_server.vocabulary").joinpath("sections.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    return _parse(tomllib.loads(text))


def folded_title_key(title: str) -> str:
    """The key a title folds to: "Chống chỉ định" -> "chong_chi_dinh"."""
    return "_".join(tokens(fold(title)))
