"""Does a word look like an (unknown) drug name? Used only when no catalog drug matched, to tell
"liều của semaglutid" (DRUG_NOT_FOUND) from "liều dùng bao nhiêu" (CLARIFY: which drug?).

A drug-like word is typed in Latin letters (no Vietnamese diacritics), has at least 5 letters, is not a
word of the section vocabulary or of rules.toml, and cannot be one Vietnamese syllable (folded):
initial consonant cluster + at most three vowels + final consonant ("semaglutid", "rivaroxaban" are not;
"nghieng", "khuyet" are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rag_server.understanding.textmatch import Tok

MIN_DRUG_LIKE_CHARS = 5
_SYLLABLE = re.compile(
    r"^(ngh|ng|nh|ch|gh|gi|kh|ph|qu|th|tr|[bcdghklmnprstvx])?[aeiouy]{1,3}(ch|ng|nh|[cmnpt])?$"
)


def is_vietnamese_syllable(folded: str) -> bool:
    return bool(_SYLLABLE.match(folded))


def drug_like_words(toks: Sequence[Tok], known: Iterable[str]) -> list[str]:
    known_set = set(known)
    out: list[str] = []
    for tok in toks:
        if tok.is_punct or tok.raw != tok.folded or not tok.folded.isalpha():
            continue
        if len(tok.folded) < MIN_DRUG_LIKE_CHARS or tok.folded in known_set:
            continue
        if not is_vietnamese_syllable(tok.folded) and tok.raw not in out:
            out.append(tok.raw)
    return out
