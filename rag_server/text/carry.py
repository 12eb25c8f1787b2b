"""Does a text carry an asked term? A term carries when one of its forms occurs in the text as whole words
(text.words: on underthesea's word boundaries), never through a shared syllable: "đau đầu" is carried by
"nhức đầu, đau đầu" and not by "liều khởi đầu" or "đau đầu gối".

A form of three syllables or more matches on its syllables alone (the segmenter may glue a head word to it:
"Chứng vú | to ở nam"). A form typed with diacritics must match them ("buồn ngủ" is not "buồn nôn"); a
form typed without any (a question typed without diacritics, an English form) matches by its folding alone.

Cost: the text's syllables are matched first (cheap); only the sentence around a syllable match is
segmented into words to check its boundaries, so a long chunk is never segmented whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from rag_server.text.match import Tok, find, phrase, tokenize
from rag_server.text.words import read_words

WHOLE_FORM_SYLLABLES = 3  # forms this long match on syllables alone (see spans)
_SENTENCE_END = re.compile(r"[.!?;…\n]")


@lru_cache(maxsize=8192)
def _tokens(text: str) -> tuple[Tok, ...]:
    return tuple(tokenize(text))


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    left = max((m.end() for m in _SENTENCE_END.finditer(text, 0, start)), default=0)
    right = _SENTENCE_END.search(text, end)
    return left, right.start() if right else len(text)


def _on_word_boundaries(text: str, start: int, end: int, n: int) -> bool:
    left, right = _sentence(text, start, end)
    words = read_words(text[left:right])
    first = next((j for j, t in enumerate(words.toks) if t.start == start - left), None)
    return first is not None and words.aligned(first, n)


def spans(text: str, forms: Iterable[str]) -> list[tuple[int, int]]:
    """[start, end) character spans of every occurrence of any form as whole words, in text order."""
    toks = _tokens(text)
    found: set[tuple[int, int]] = set()
    for form in dict.fromkeys(forms):
        pat = phrase(form)  # the syllables first, its own typing deciding the accents
        n = len(pat)
        for i in find(toks, pat, typed=True):
            start, end = toks[i].start, toks[i + n - 1].end
            # a form of three syllables or more is its own evidence: the segmenter may glue a head word to
            # it ("Chứng vú | to ở nam"), and no shorter word hides inside it the way "đầu" does
            if (start, end) not in found and (n >= WHOLE_FORM_SYLLABLES
                                              or _on_word_boundaries(text, start, end, n)):
                found.add((start, end))
    return sorted(found)


def carries(text: str, forms: Iterable[str]) -> bool:
    """Whether `text` carries any of `forms` (see the module doc)."""
    return bool(spans(text, forms))
