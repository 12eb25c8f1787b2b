"""Load sections.toml and answer the two questions asked of it:

* `heading_key(text)`: which section does this heading (as printed, with spelling slips) start?
* `resolve_section(question)`: which section does this question ask for? No match is not a guess: None.
  The cues of a question are its non-overlapping phrase matches, longest phrase first ("chống chỉ định"
  claims its words before "chỉ định" could, "quá liều" before "liều"). When the cues name two or more
  sections, THE MORE SPECIFIC SECTION WINS: the higher `specificity` (sections.toml), then the longer
  phrase (words, then characters), then the earlier one ("uống bao nhiêu thì bị ngộ độc" asks about
  overdose, not dosage; "xử trí tác dụng phụ" about managing an ADR, not the ADR list; "chỉ định và chống
  chỉ định" about the contraindications). A section's `hints` (weak cues such as "hằng tuần", "mấy
  nhát") are looked for only when no phrase of any section matched; they add up (the section with the
  most hint words wins, then the strongest hint), so a question made of everyday words ("để trong xe hơi
  mùa hè có bị hư không") finds its section by the several words that point to it.
  Matching is text.match with AccentRule.WORD: a word typed without diacritics matches any accented form
  ("chong chi dinh"), a word typed with them must match them ("có che" is not "cơ chế"); a phrase never
  matches across punctuation. Cost: one pass over the question's words, phrases indexed by first word.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from rag_server.text.match import (
    AccentRule,
    Phrase,
    Phrases,
    Tok,
    claim,
    folded_words,
    phrase,
    tokenize,
    typed_single,
)


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
    position: int  # token index of the cue's first word
    weak: bool = False  # matched a hint, not a phrase
    length: int = 0  # tokens


@dataclass(frozen=True)
class SectionRoles:
    """What each section is for (sections.toml [roles]): the one place code learns a section's key."""

    inn: str
    atc: str
    drug_class: str
    brands: str
    indication: str
    pharmacology: str
    pharmacokinetics: str
    overdose: str
    adr_management: str
    dosage: str
    pregnancy: str
    breastfeeding: str
    pooled: tuple[str, ...]
    interaction_facet: tuple[str, ...]
    warning_facet: tuple[str, ...]
    dosage_facet: tuple[str, ...]
    effect_sections: tuple[str, ...]
    with_second_medicine: tuple[str, ...]
    with_carried_medicine: tuple[str, ...]
    yields_to_effect: tuple[str, ...]
    yields_to_population: tuple[str, ...]
    yields_to_condition: tuple[str, ...]
    population_yields_to: tuple[str, ...]
    population: tuple[str, ...]
    suggested: tuple[str, ...]

    def keys(self) -> set[str]:
        out: set[str] = set()
        for value in self.__dict__.values():
            out.update((value,) if isinstance(value, str) else value)
        return out


@dataclass(frozen=True)
class PointerWords:
    """How a section points to another ("xem [thêm] [mục|phần] <heading>", sections.toml [pointer]), each
    word folded."""

    see: frozenset[str]
    also: frozenset[str]
    kinds: frozenset[str]


@dataclass
class Vocabulary:
    sections: dict[str, SectionSpec]
    intro_sections: tuple[str, ...]
    identity_sections: tuple[str, ...]
    roles: SectionRoles
    pointer: PointerWords
    plain_ambiguous: frozenset[str] = frozenset()  # folded words typed bare that are no one-word cue
    _headings: dict[str, str] = field(default_factory=dict)
    _phrases: _Cues = field(init=False)
    _hints: _Cues = field(init=False)

    def __post_init__(self) -> None:
        for spec in self.sections.values():
            for text in (spec.title, *spec.aliases):
                self._headings.setdefault(_heading_form(text), spec.key)
        self._phrases = self._cue_set(lambda spec: {spec.title, *spec.phrases})
        self._hints = self._cue_set(lambda spec: set(spec.hints))

    def _cue_set(self, texts: Callable[[SectionSpec], set[str]]) -> _Cues:
        """The phrases of every section, ranked longest first (in words, then characters), ties in book
        order; a phrase text listed by two sections belongs to the first in book order."""
        owner: dict[Phrase, str] = {}
        for spec in self.sections.values():
            for text in sorted(texts(spec)):
                pat = phrase(text)
                if len(pat):
                    owner.setdefault(pat, spec.key)
        ranked = sorted(owner, key=lambda p: (-len(p), -len(" ".join(p.folded)), self.order(owner[p])))
        return _Cues(Phrases(ranked), owner, {p: r for r, p in enumerate(ranked)}, self.plain_ambiguous)

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

    def resolve_section(self, question: str | Sequence[Tok]) -> PhraseMatch | None:
        """The section the question's cues ask for (see the module doc), else the best hint (weak);
        None when nothing matches. Given tokens, they must be read word by word for accents
        (text.match.word_accents)."""
        toks = tokenize(question, AccentRule.WORD) if isinstance(question, str) else question
        cues = self._phrases.find(toks)
        if cues:
            position, best = max(cues, key=lambda c: self._strength(self._phrases.owner[c[1]], c[1], c[0]))
            return PhraseMatch(self._phrases.owner[best], best.text, position, False, len(best))
        hints = self._hints.find(toks)
        if not hints:
            return None
        # weak cues add up: "để trong xe hơi mùa hè có bị hư" has four storage hints and none of another
        owner = self._hints.owner
        votes: dict[str, int] = {}
        for _, pat in hints:
            votes[owner[pat]] = votes.get(owner[pat], 0) + len(pat)
        position, best = max(
            hints, key=lambda c: (votes[owner[c[1]]], self._strength(owner[c[1]], c[1], c[0]))
        )
        return PhraseMatch(owner[best], best.text, position, True, len(best))

    def cues(self, question: str | Sequence[Tok]) -> list[PhraseMatch]:
        """Every non-overlapping section cue of a question, in text order (phrases only, no hints). Given
        tokens, they must be read word by word for accents (text.match.word_accents)."""
        toks = tokenize(question, AccentRule.WORD) if isinstance(question, str) else question
        found = self._phrases.find(toks)
        return [PhraseMatch(self._phrases.owner[p], p.text, i, False, len(p)) for i, p in found]

    def _strength(self, section_key: str, pat: Phrase, position: int) -> tuple[int, int, int, int]:
        spec = self.sections[section_key]
        return (spec.specificity, len(pat), len(" ".join(pat.folded)), -position)


@dataclass(frozen=True)
class _Cues:
    patterns: Phrases
    owner: dict[Phrase, str]  # phrase -> section_key
    rank: dict[Phrase, int]  # longest-first order
    plain_ambiguous: frozenset[str] = frozenset()

    def find(self, toks: Sequence[Tok]) -> list[tuple[int, Phrase]]:
        """Non-overlapping (token position, phrase) matches in text order, claimed longest phrase first. In a
        question typed with diacritics, a word typed without them is that word: it matches no one-word
        accented cue ("sáng với tối uống bằng nhau" says no "nhậu"); a question typed entirely without
        diacritics matches every cue by its folding, except a bare word of `plain_ambiguous` alone ("thieu
        mau nang" is "nặng" far more often than "nắng")."""
        hits = self.patterns.matches(toks)
        if any(t.raw != t.folded and not t.loose for t in toks):  # as typed ("ko" read as "không" is not)
            hits = typed_single(toks, hits)
        elif self.plain_ambiguous:
            hits = [(i, p) for i, p in hits if len(p) > 1 or toks[i].folded not in self.plain_ambiguous
                    or not toks[i].loose]
        return claim(hits, len(toks), rank=lambda p: (self.rank[p],))


# OCR slips seen in the book: "qui" for "quy", "Ouá" for "Quá".
_SLIPS = {"qui": "quy", "ki": "ky", "oua": "qua"}


def _heading_form(text: str) -> str:
    words = folded_words(text)
    return " ".join(_SLIPS.get(w, w) for w in words)


def _parse(data: dict[str, object]) -> Vocabulary:
    raw_sections = data["section"]
    assert isinstance(raw_sections, list)
    sections: dict[str, SectionSpec] = {}
    for order, raw in enumerate(raw_sections):
        key = str(raw["key"])
        if key != "_".join(folded_words(key)) or key in sections:
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
    if "roles" not in data:
        raise ValueError("sections.toml needs a [roles] table (what each section is for)")
    roles = _roles(data["roles"])
    for key in sorted(roles.keys()):
        if key not in sections:
            raise ValueError(f"intro/identity/role section {key!r} is not a declared section")
    plain = frozenset(w for text in data.get("plain_ambiguous", []) for w in folded_words(str(text)))  # type: ignore[attr-defined]
    return Vocabulary(sections=sections, intro_sections=intro, identity_sections=identity, roles=roles,
                      pointer=_pointer(data.get("pointer")), plain_ambiguous=plain)


def _pointer(raw: object) -> PointerWords:
    if not isinstance(raw, dict):
        raise ValueError("sections.toml needs a [pointer] table (how a section points to another)")

    def words(name: str) -> frozenset[str]:
        found = frozenset(w for text in raw.get(name, []) for w in folded_words(str(text)))
        if not found:
            raise ValueError(f"sections.toml [pointer] {name}: at least one word")
        return found

    return PointerWords(see=words("see"), also=words("also"), kinds=words("kinds"))


def _roles(raw: object) -> SectionRoles:
    assert isinstance(raw, dict), "sections.toml: [roles] is a table"
    values = {
        name: (str(raw[name]) if isinstance(raw[name], str) else tuple(str(k) for k in raw[name]))
        for name in SectionRoles.__dataclass_fields__
    }
    return SectionRoles(**values)  # type: ignore[arg-type]


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
    return "_".join(folded_words(title))
