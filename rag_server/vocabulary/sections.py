"""Load sections.toml and answer the two questions asked of it:

* `heading_key(text)`: which section does this heading (as printed, with spelling slips) start?
* `resolve_section(question)`: which section does this question ask for? No match is not a guess: None.
  The cues of a question are its non-overlapping phrase matches, longest phrase first ("chống chỉ định"
  claims its words before "chỉ định" could, "quá liều" before "liều"). When the cues name two or more
  sections, THE MORE SPECIFIC SECTION WINS: the higher `specificity` (sections.toml), then the longer
  phrase (words, then characters), then the earlier one ("uống bao nhiêu thì bị ngộ độc" asks about
  overdose, not dosage; "xử trí tác dụng phụ" about managing an ADR, not the ADR list; "chỉ định và chống
  chỉ định" about the contraindications). A section's `hints` (weak cues such as "hằng tuần", "mấy
  nhát") are looked for only when no phrase of any section matched.
  Matching is per word accent-compatible: a word typed without diacritics matches any accented form
  ("chong chi dinh"), a word typed with them must match them ("có che" is not "cơ chế").
  Cost: one pass over the question's words with the phrases indexed by their first word.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from rag_server.text.normalize import fold, tokens


@dataclass(frozen=True)
class SectionSpec:
    key: str
    title: str
    order: int
    aliases: tuple[str, ...]
    phrases: tuple[str, ...]
    hints: tuple[str, ...] = ()
    specificity: int = 1  # when a question cues several sections, the most specific one wins


@dataclass(frozen=True)
class PhraseMatch:
    section_key: str
    phrase: str
    position: int
    weak: bool = False  # matched a hint, not a phrase


@dataclass
class Vocabulary:
    sections: dict[str, SectionSpec]
    intro_sections: tuple[str, ...]
    identity_sections: tuple[str, ...]
    _headings: dict[str, str] = field(default_factory=dict)
    _phrases: dict[str, list[_Entry]] = field(default_factory=dict)  # first folded word -> entries
    _hints: dict[str, list[_Entry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for spec in self.sections.values():
            for text in (spec.title, *spec.aliases):
                self._headings.setdefault(_heading_form(text), spec.key)
        self._phrases = _by_first(self._ordered(lambda spec: {spec.title, *spec.phrases}))
        self._hints = _by_first(self._ordered(lambda spec: set(spec.hints)))

    def _ordered(self, texts: Callable[[SectionSpec], set[str]]) -> list[_Entry]:
        entries: list[_Entry] = []
        for spec in self.sections.values():
            for phrase in sorted(texts(spec)):
                raw, folded = _words(phrase)
                if folded:
                    entries.append(_Entry(folded, raw, spec.key, phrase))
        # Longest phrase first (in tokens, then characters); ties keep book order.
        entries.sort(key=lambda e: (-len(e.folded), -len(" ".join(e.folded)), self.sections[e.key].order))
        return [dataclasses.replace(e, rank=rank) for rank, e in enumerate(entries)]

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
        """The section the question's cues ask for (see the module doc), else the best hint (weak);
        None when nothing matches."""
        q_raw, q_tokens = _words(question)
        for index, weak in ((self._phrases, False), (self._hints, True)):
            cues = _cues(q_raw, q_tokens, index)
            if cues:
                best = max(cues, key=lambda c: self._strength(c[0], c[1]))
                return PhraseMatch(best[0].key, best[0].phrase, best[1], weak)
        return None

    def cues(self, question: str) -> list[PhraseMatch]:
        """Every non-overlapping section cue of a question, in text order (phrases only, no hints)."""
        q_raw, q_tokens = _words(question)
        return [PhraseMatch(e.key, e.phrase, pos) for e, pos in sorted(
            _cues(q_raw, q_tokens, self._phrases), key=lambda c: c[1])]

    def _strength(self, entry: _Entry, position: int) -> tuple[int, int, int, int]:
        spec = self.sections[entry.key]
        return (spec.specificity, len(entry.folded), len(" ".join(entry.folded)), -position)

    def strip_phrase(self, question: str, match: PhraseMatch) -> list[str]:
        """Question tokens with the matched section phrase removed (what is left names the drug)."""
        q_tokens = tokens(question)
        n = len(tokens(match.phrase))
        return q_tokens[: match.position] + q_tokens[match.position + n :]


@dataclass(frozen=True)
class _Entry:
    folded: list[str]
    raw: list[str]
    key: str
    phrase: str
    rank: int = 0  # position in the longest-first order


def _by_first(entries: list[_Entry]) -> dict[str, list[_Entry]]:
    index: dict[str, list[_Entry]] = {}
    for entry in entries:
        index.setdefault(entry.folded[0], []).append(entry)
    return index


def _cues(q_raw: list[str], q_tokens: list[str], index: dict[str, list[_Entry]]) -> list[tuple[_Entry, int]]:
    """Non-overlapping (entry, position) matches, claimed longest phrase first."""
    hits: list[tuple[_Entry, int]] = []
    for i, tok in enumerate(q_tokens):
        for entry in index.get(tok, ()):
            n = len(entry.folded)
            if q_tokens[i : i + n] == entry.folded and _accents_fit(q_raw, i, entry):
                hits.append((entry, i))
    hits.sort(key=lambda h: (h[0].rank, h[1]))
    taken = [False] * len(q_tokens)
    out: list[tuple[_Entry, int]] = []
    for entry, i in hits:
        n = len(entry.folded)
        if not any(taken[i : i + n]):
            taken[i : i + n] = [True] * n
            out.append((entry, i))
    return out


_RAW_WORD = re.compile(r"[^\W_]+")
_D = str.maketrans({"Đ": "đ", "Ð": "đ", "ð": "đ"})


def _words(text: str) -> tuple[list[str], list[str]]:
    """(accented, folded) word tokens, aligned; the folded ones are exactly `tokens(text)`. A word whose
    folding is not one token (odd characters) keeps its folded pieces as accented forms (loose match)."""
    raw: list[str] = []
    folded: list[str] = []
    text = unicodedata.normalize("NFKC", text)
    for word in _RAW_WORD.findall(text.translate(_D).lower()):
        pieces = tokens(word)
        raw.extend([word] if len(pieces) == 1 else pieces)
        folded.extend(pieces)
    if folded != tokens(text):  # never expected; fall back to loose matching
        folded = tokens(text)
        raw = list(folded)
    return raw, folded


def _accents_fit(q_raw: list[str], start: int, entry: _Entry) -> bool:
    """A question word typed without diacritics fits any accented form, as does a plain phrase word;
    otherwise the accented forms must be equal."""
    for j, (p_raw, p_folded) in enumerate(zip(entry.raw, entry.folded, strict=True)):
        q = q_raw[start + j]
        if q != p_raw and q != fold(q) and p_raw != p_folded:
            return False
    return True


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
            hints=tuple(str(p) for p in raw.get("hints", [])),
            specificity=int(raw.get("specificity", 1)),
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
