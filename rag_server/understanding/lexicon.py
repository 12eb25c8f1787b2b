"""Does a word look like an (unknown) drug name? Used only when no catalog drug matched, to tell
"liều của semaglutid" (DRUG_NOT_FOUND) from "liều dùng bao nhiêu" (CLARIFY: which drug?).

A drug-like word is typed in Latin letters (no Vietnamese diacritics), has 5 to 40 letters, is not a
word of the section vocabulary or of rules.toml, and cannot be one Vietnamese syllable (folded):
initial consonant cluster + at most three vowels + final consonant ("semaglutid", "rivaroxaban" are not;
"nghieng", "khuyet" are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rag_server.text.match import Tok

MIN_DRUG_LIKE_CHARS = 5
MAX_DRUG_LIKE_CHARS = 40  # a longer "word" is no drug name
_SYLLABLE = re.compile(
    r"^(ngh|ng|nh|ch|gh|gi|kh|ph|qu|th|tr|[bcdghklmnprstvx])?[aeiouy]{1,3}(ch|ng|nh|[cmnpt])?$"
)


def is_vietnamese_syllable(folded: str) -> bool:
    return bool(_SYLLABLE.match(folded))


def is_drug_like(tok: Tok, known: frozenset[str] | set[str], min_chars: int = MIN_DRUG_LIKE_CHARS) -> bool:
    """Latin letters only, >= `min_chars` letters, no known word, no Vietnamese syllable."""
    if tok.is_punct or tok.raw != tok.folded or not tok.folded.isalpha() or not tok.folded.isascii():
        return False
    if not min_chars <= len(tok.folded) <= MAX_DRUG_LIKE_CHARS or tok.folded in known:
        return False
    return not is_vietnamese_syllable(tok.folded)


def drug_like_words(toks: Sequence[Tok], known: Iterable[str]) -> list[str]:
    known_set = set(known)
    out: list[str] = []
    for tok in toks:
        if is_drug_like(tok, known_set) and tok.raw not in out:
            out.append(tok.raw)
    return out
