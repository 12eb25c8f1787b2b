"""Vietnamese words: a text's tokens (text.match.tokenize, one per syllable or mark) grouped into the words
underthesea's segmentation finds, so a phrase is found only where it starts and ends on word boundaries:
"đau đầu" is one word and is not in "liều khởi đầu" (the word "khởi đầu") nor in "đau đầu gối" (the word
"đầu gối" follows "đau"). This is the one word segmentation of the service (text.bm25 reads it too).

Cost: segmentation is about 0.3 ms per sentence; a text's words are cached (bounded LRU, by text), so a
formulary chunk is segmented once per process however often it is shown.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

from rag_server.text.match import AccentRule, Phrase, Tok, match_at, tokenize, word_forms
from rag_server.text.normalize import nfkc

_lock = threading.Lock()
MAX_SEGMENTED_CHARS = 20_000  # a longer text is read as syllables (each its own word)


@lru_cache(maxsize=16384)
def segmented(text: str) -> tuple[str, ...]:
    """underthesea's words of `text` (syllables of a word joined by spaces, marks as their own words)."""
    from underthesea import word_tokenize

    with _lock:
        return tuple(word_tokenize(text))


@dataclass(frozen=True)
class Words:
    """A text's tokens and, for each, the index of the word it belongs to."""

    toks: tuple[Tok, ...]
    word_of: tuple[int, ...]

    def aligned(self, i: int, n: int) -> bool:
        """Tokens [i, i + n) start and end on word boundaries."""
        last = i + n - 1
        if n <= 0 or last >= len(self.toks):
            return False
        starts = i == 0 or self.word_of[i - 1] != self.word_of[i]
        ends = last == len(self.toks) - 1 or self.word_of[last + 1] != self.word_of[last]
        return starts and ends

    def find(self, pat: Phrase) -> list[int]:
        """Token positions where `pat` occurs on word boundaries (accent-compatible, text.match)."""
        n = len(pat)
        if not n:
            return []
        first = pat.folded[0]
        return [i for i, t in enumerate(self.toks)
                if t.folded == first and match_at(self.toks, i, pat) and self.aligned(i, n)]


@lru_cache(maxsize=8192)
def read_words(text: str, accents: AccentRule = AccentRule.TEXT) -> Words:
    """The tokens of `text` with their words (see the module doc)."""
    toks = tuple(tokenize(text, accents))
    if len(text) > MAX_SEGMENTED_CHARS:
        return Words(toks, tuple(range(len(toks))))
    return Words(toks, _align(toks, segmented(nfkc(text))))


def _align(toks: tuple[Tok, ...], seg: tuple[str, ...]) -> tuple[int, ...]:
    """Word index per token: each segmented word claims the next tokens its own pieces spell; a token no
    word spells (the segmenter changed the text) is a word of its own."""
    word_of = [-1] * len(toks)
    ti = 0
    next_id = 0
    for word in seg:
        pieces = [raw for raw, _ in word_forms(word)]
        if not pieces:
            continue
        start = ti
        while ti < len(toks) and ti - start < 4 and toks[ti].raw != pieces[0]:
            ti += 1  # skipped tokens get words of their own below
        if ti >= len(toks) or toks[ti].raw != pieces[0]:
            ti = start
            continue
        k = 0
        while k < len(pieces) and ti < len(toks) and toks[ti].raw == pieces[k]:
            word_of[ti] = next_id
            ti += 1
            k += 1
        next_id += 1
    for i, w in enumerate(word_of):
        if w < 0:
            word_of[i] = next_id
            next_id += 1
    return tuple(word_of)
