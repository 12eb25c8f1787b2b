"""Spelling variants of drug names (INN as written in Vietnamese, French and English) and bounded typos.

`inn_key(word)` maps the ways one INN is written to one key: accents folded, then
  ph -> f, th -> t, ch -> c, qu -> k, ck -> k, c -> k, y -> i, ae/oe -> e, doubled letters single,
  a final -ium -> -i ("lithium" = "lithi"), a final -e dropped ("amlodipine" = "amlodipin").
So "theophylline", "theophylin" and "teofilin" share a key, as do "amoxicillin" / "amoxicilin",
"cephalexin" / "cefalexin" and "allopurinol" / "alopurinol".

`typo_bound(key)`: a key of 5-8 characters tolerates 1 edit, 9 or more 2; shorter keys none. Keys longer
than MAX_KEY_CHARS are never compared (no name is that long), so a comparison costs O(bound x length).

`osa_distance(a, b, bound)` is the one edit distance of the service (Damerau-Levenshtein, optimal string
alignment: adjacent transpositions count one edit); the drug-name typo index (understanding.fuzzy) and the
spelling-variant comparison here both use it, with the same bounds (`typo_bound`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag_server.text.normalize import fold

MAX_KEY_CHARS = 40
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_DOUBLE = re.compile(r"([a-z])\1+")
_PAIRS = (("ph", "f"), ("th", "t"), ("ch", "c"), ("qu", "k"), ("ck", "k"), ("c", "k"), ("y", "i"),
          ("ae", "e"), ("oe", "e"))


@lru_cache(maxsize=65536)
def inn_key(word: str) -> str:
    """The spelling-variant key of one word (see the module doc); "" for a word without letters."""
    w = _NON_ALNUM.sub("", fold(word))
    if not w or len(w) > MAX_KEY_CHARS or not any(ch.isalpha() for ch in w):
        return ""
    for a, b in _PAIRS:
        w = w.replace(a, b)
    w = _DOUBLE.sub(r"\1", w)
    if w.endswith("ium") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


MIN_TYPO_CHARS = 5  # shorter: no typo tolerated
LONG_TYPO_CHARS = 9  # this long or longer: MAX_TYPO_EDITS
MAX_TYPO_EDITS = 2


def typo_bound(key: str) -> int:
    """Edits a word of this length tolerates: < 5 characters none, 5-8 one, 9 or more two."""
    n = len(key)
    if n < MIN_TYPO_CHARS:
        return 0
    return 1 if n < LONG_TYPO_CHARS else MAX_TYPO_EDITS


def within_typo(a: str, b: str) -> int | None:
    """The edit distance of two keys when within the bound of the shorter one, else None."""
    bound = min(typo_bound(a), typo_bound(b))
    if bound == 0 or abs(len(a) - len(b)) > bound or a[:1] != b[:1]:
        return None
    d = osa_distance(a, b, bound)
    return d if d <= bound else None


def osa_distance(a: str, b: str, bound: int | None = None) -> int:
    """Damerau-Levenshtein (OSA: adjacent transpositions) distance; with `bound`, bound + 1 as soon as every
    alignment exceeds it."""
    if a == b:
        return 0
    la, lb = len(a), len(b)
    if bound is not None and abs(la - lb) > bound:
        return bound + 1
    prev2: list[int] = []
    prev = list(range(lb + 1))
    for i in range(1, la + 1):
        cur = [i] + [0] * lb
        for j in range(1, lb + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if bound is not None and min(cur) > bound:
            return bound + 1
        prev2, prev = prev, cur
    return prev[lb]
