"""The one tokenizer and the one phrase matcher of the service: text tokens kept in two aligned forms
(accented and folded; `tokenize`, or `folded_words` for the folded words alone) and accent-compatible
phrase matching, used by understanding (drug names, medications, conditions, scope), retrieval (the
indication keyword pass, asked terms carried by a chunk) and the section vocabulary alike.

Two accent rules (`AccentRule`):
* TEXT (default): a text typed entirely without diacritics is matched loosely, each token matching any
  accented form with the same folding ("chong chi dinh" ~ "chống chỉ định"); as soon as a text carries
  diacritics they are meaningful and every token must match exactly ("hẹn" is not "hen", "cho" is not
  "chó"). Names and clinical terms use it.
* WORD: each word typed without diacritics matches loosely even in a text with diacritics elsewhere
  (section cues: "chong chi định"; "có che" is still not "cơ chế" because "có" carries them).
Punctuation is kept as separate tokens so a phrase never matches across it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cached_property, lru_cache
from typing import NamedTuple

from rag_server.text.normalize import fold, newer_tone, nfkc

_TOKEN = re.compile(r"[^\W_]+|[,.;:?!/+()]", re.UNICODE)
_D = str.maketrans({"Ð": "đ", "Đ": "đ", "ð": "đ"})
PUNCT = frozenset(",.;:?!/+()")


class Tok(NamedTuple):  # a tuple: a question or a chunk makes hundreds of them per call
    raw: str  # lower case, NFC, Ð -> đ
    folded: str
    start: int  # character offsets in the original text
    end: int
    loose: bool = False  # typed without diacritics in a text without any: matches by folding alone

    @property
    def is_punct(self) -> bool:
        return self.raw in PUNCT

    @property
    def ascii(self) -> bool:
        return self.raw.isascii()


@lru_cache(maxsize=65536)
def _forms(word: str) -> tuple[str, str]:
    """(raw, folded) of one token as matched (words repeat: the cache turns most into one lookup)."""
    raw = newer_tone(nfkc(word).translate(_D).lower())
    return raw, raw if raw in PUNCT else fold(raw)


def _nfkc_offsets(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """NFKC `text`, and for each of its characters the [start, end) in `text` of the character (with its
    combining marks) it comes from; None, None when NFKC leaves `text` as it is (nearly always)."""
    norm = nfkc(text)
    if norm == text:
        return norm, None, None
    starts: list[int] = []
    ends: list[int] = []
    pieces: list[str] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and unicodedata.combining(text[j]):
            j += 1
        piece = nfkc(text[i:j])
        pieces.append(piece)
        starts.extend([i] * len(piece))
        ends.extend([j] * len(piece))
        i = j
    if "".join(pieces) != norm:  # composition across characters (never in Vietnamese): offsets as read
        return norm, None, None
    return norm, starts, ends


class AccentRule(Enum):
    TEXT = "text"  # loose only when the whole text is typed without diacritics
    WORD = "word"  # loose for each word typed without diacritics


def tokenize(text: str, accents: AccentRule = AccentRule.TEXT) -> list[Tok]:
    """Word and punctuation tokens of NFKC-normalised text (full-width letters are plain letters, "…" is
    three full stops), with their offsets in `text` itself."""
    norm, starts, ends = _nfkc_offsets(text)
    matches = list(_TOKEN.finditer(norm))
    forms = [_forms(m.group()) for m in matches]
    plain = [raw == f for raw, f in forms]
    if accents is AccentRule.TEXT:
        plain = [all(plain)] * len(plain)
    if starts is None or ends is None:
        return [
            Tok(raw, f, m.start(), m.end(), loose)
            for m, (raw, f), loose in zip(matches, forms, plain, strict=True)
        ]
    return [
        Tok(raw, f, starts[m.start()], ends[m.end() - 1], loose)
        for m, (raw, f), loose in zip(matches, forms, plain, strict=True)
    ]


def word_accents(toks: Sequence[Tok]) -> list[Tok]:
    """The tokens read word by word for accents (AccentRule.WORD), from tokens read either way (a word an
    abbreviation stands for, `expand`, stays loose: it was not typed with its diacritics)."""
    return [t._replace(loose=t.loose or (t.raw == t.folded and not t.is_punct)) for t in toks]


def expand(
    toks: Sequence[Tok],
    table: Mapping[str, tuple[tuple[str, str], ...]],
    before_unit: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
    units: frozenset[str] = frozenset(),
) -> list[Tok]:
    """Tokens with each abbreviation of `table` ("ko" -> "không") replaced by the words it stands for, each
    at the abbreviation's offsets and matching by its folding; right before one of `units`, `before_unit`'s
    reading wins ("bn mg" -> "bao nhiêu mg")."""
    if not table:
        return list(toks)
    out: list[Tok] = []
    for i, tok in enumerate(toks):
        forms = table.get(tok.raw)
        if before_unit and tok.raw in before_unit and i + 1 < len(toks) and toks[i + 1].raw in units:
            forms = before_unit[tok.raw]
        if forms is None:
            out.append(tok)
        else:
            out.extend(Tok(raw, folded, tok.start, tok.end, True) for raw, folded in forms)
    return out


@dataclass(frozen=True)
class Phrase:
    """A pattern: accented and folded word forms (punctuation-free unless the phrase is one mark)."""

    text: str
    raw: tuple[str, ...]
    folded: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.raw)

    @property
    def plain(self) -> bool:
        """Typed without diacritics (its accented and folded forms are the same)."""
        return self.raw == self.folded


@lru_cache(maxsize=65536)
def phrase(text: str) -> Phrase:
    toks = tokenize(text)
    if not (len(toks) == 1 and toks[0].is_punct):
        toks = [t for t in toks if not t.is_punct]
    return Phrase(text, tuple(t.raw for t in toks), tuple(t.folded for t in toks))


def compatible(tok: Tok, raw: str, folded: str) -> bool:
    return tok.folded == folded and (tok.loose or tok.raw == raw)


def match_at(toks: Sequence[Tok], i: int, pat: Phrase, typed: bool = False) -> bool:
    """Whether `pat` occurs at token i. The text's tokens decide the accents (`Tok.loose`), or, with
    `typed`, the pattern's own typing: a pattern typed without diacritics matches by folding alone, one
    typed with them must match them ("buồn ngủ" is not "buồn nôn"), however the text is typed."""
    n = len(pat)
    if n == 0 or i + n > len(toks):
        return False
    if typed:
        loose = pat.plain
        return all(
            toks[i + j].folded == pat.folded[j] and (loose or toks[i + j].raw == pat.raw[j]) for j in range(n)
        )
    return all(compatible(toks[i + j], pat.raw[j], pat.folded[j]) for j in range(n))


def find(
    toks: Sequence[Tok], pat: Phrase, typed: bool = False, starts: Iterable[int] | None = None
) -> list[int]:
    """Start indices where the phrase occurs (contiguous, word-boundary exact, accent-compatible; `typed`:
    see `match_at`), in text order. `starts`: the only positions to try (a caller's index of where the
    phrase's first folded word occurs), else every token."""
    if not len(pat):
        return []
    if starts is not None:
        return [i for i in starts if match_at(toks, i, pat, typed)]
    first = pat.folded[0]
    return [i for i, t in enumerate(toks) if t.folded == first and match_at(toks, i, pat, typed)]


class Phrases(tuple[Phrase, ...]):
    """An immutable set of patterns indexed by their first folded word, so matching a question costs
    O(question words x patterns sharing a first word), never O(question words x all patterns)."""

    @cached_property
    def by_first(self) -> dict[str, tuple[Phrase, ...]]:
        index: dict[str, list[Phrase]] = {}
        for pat in self:
            if len(pat):
                index.setdefault(pat.folded[0], []).append(pat)
        return {k: tuple(sorted(v, key=lambda p: (-len(p), p.text))) for k, v in index.items()}

    def matches(self, toks: Sequence[Tok]) -> list[tuple[int, Phrase]]:
        """Every (start, pattern) occurrence, overlapping ones included."""
        index = self.by_first
        out: list[tuple[int, Phrase]] = []
        for i, tok in enumerate(toks):
            for pat in index.get(tok.folded, ()):
                if match_at(toks, i, pat):
                    out.append((i, pat))
        return out


    def found_in(self, forms: Sequence[tuple[str, str]], loose: bool) -> bool:
        """Whether any pattern occurs in `forms` ((raw, folded) per token, `word_forms`): accent-compatible
        as `find`, or by folding alone when `loose`. Cheaper than tokenize + find_any on a long text."""
        index = self.by_first
        n = len(forms)
        for i, (_, first) in enumerate(forms):
            for pat in index.get(first, ()):
                k = len(pat)
                if i + k <= n and all(
                    forms[i + j][1] == pat.folded[j] and (loose or forms[i + j][0] == pat.raw[j])
                    for j in range(k)
                ):
                    return True
        return False


def word_forms(text: str) -> list[tuple[str, str]]:
    """(raw, folded) of every token of `text`, as `tokenize` makes them, without offsets or Tok objects."""
    return [_forms(piece) for piece in _TOKEN.findall(nfkc(text))]


def folded_words(text: str) -> list[str]:
    """The folded words of `text` as `tokenize` reads them, punctuation left out:
    "Chống chỉ định:" -> ["chong", "chi", "dinh"]."""
    return [folded for raw, folded in map(_forms, _TOKEN.findall(nfkc(text))) if raw not in PUNCT]


def phrases(patterns: Iterable[Phrase]) -> Phrases:
    return patterns if isinstance(patterns, Phrases) else Phrases(patterns)


_UNIONS: dict[tuple[int, ...], tuple[tuple[tuple[Phrase, ...], ...], Phrases]] = {}
MAX_UNIONS = 512  # distinct unions of long-lived vocabulary sets; more means sets made per call


def union(*sets: tuple[Phrase, ...]) -> Phrases:
    """The patterns of `sets` as one Phrases, built and indexed once per combination of (long-lived,
    vocabulary) sets rather than once per question: keyed by the sets' identities, which the entry keeps
    alive so an id is never reused while its entry stands."""
    key = tuple(map(id, sets))
    hit = _UNIONS.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], sets, strict=True)):
        if len(_UNIONS) >= MAX_UNIONS:
            _UNIONS.clear()
        hit = _UNIONS[key] = (sets, Phrases(p for s in sets for p in s))
    return hit[1]


def longest_first(pat: Phrase) -> tuple[int, str]:
    return (-len(pat), pat.text)


def find_any(
    toks: Sequence[Tok],
    patterns: Iterable[Phrase],
    rank: Callable[[Phrase], tuple[int | str, ...]] = longest_first,
) -> list[tuple[int, Phrase]]:
    """Non-overlapping matches in text order, claimed in `rank` order (default: longest pattern first,
    then by pattern text), leftmost first among equals."""
    return claim(phrases(patterns).matches(toks), len(toks), rank)


def claim(
    hits: list[tuple[int, Phrase]], size: int, rank: Callable[[Phrase], tuple[int | str, ...]] = longest_first
) -> list[tuple[int, Phrase]]:
    """Of the (start, pattern) occurrences `hits` over `size` tokens, the non-overlapping ones `find_any`
    keeps: claimed in `rank` order, leftmost first among equals; returned in text order."""
    hits.sort(key=lambda f: (*rank(f[1]), f[0]))
    taken = [False] * size
    found: list[tuple[int, Phrase]] = []
    for i, pat in hits:
        if not any(taken[i : i + len(pat)]):
            for j in range(i, i + len(pat)):
                taken[j] = True
            found.append((i, pat))
    found.sort(key=lambda f: f[0])
    return found


def typed_single(toks: Sequence[Tok], hits: Iterable[tuple[int, Phrase]]) -> list[tuple[int, Phrase]]:
    """`hits` without the one-word accented phrases matched by a word typed without those accents: "mo"
    may be "mổ", "mở" or "mỡ", so it names none of them; "chậm" or a phrase of two words still matches
    loosely."""
    return [
        (i, p) for i, p in hits
        if len(p) != 1 or p.raw[0] == p.folded[0] or toks[i].raw.lower() == p.raw[0]
    ]


def words(toks: Sequence[Tok]) -> list[Tok]:
    return [t for t in toks if not t.is_punct]


def text_of(toks: Sequence[Tok]) -> str:
    return " ".join(t.raw for t in toks if not t.is_punct)
