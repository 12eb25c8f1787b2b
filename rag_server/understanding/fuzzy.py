"""Bounded typo tolerance for drug names: Damerau-Levenshtein (optimal string alignment) distance and a
deletion-neighbourhood index (SymSpell style) so a lookup never scans the whole catalog.

Bounds (on the folded name): < 5 characters no fuzzy match, 5-8 characters at most 1 edit,
9 or more at most 2 edits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations

MIN_FUZZY_CHARS = 5
LONG_NAME_CHARS = 9


def max_edits(name: str) -> int:
    n = len(name)
    if n < MIN_FUZZY_CHARS:
        return 0
    return 1 if n < LONG_NAME_CHARS else 2


def osa_distance(a: str, b: str, bound: int | None = None) -> int:
    """Damerau-Levenshtein (OSA: adjacent transpositions); returns bound + 1 early when exceeded."""
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


def _deletes(word: str, depth: int) -> set[str]:
    out = {word}
    for k in range(1, min(depth, len(word)) + 1):
        for idx in combinations(range(len(word)), k):
            skip = set(idx)
            out.add("".join(ch for i, ch in enumerate(word) if i not in skip))
    return out


class FuzzyIndex:
    """name (folded, words joined by one space) -> keys; lookup returns (distance, key) within bounds."""

    def __init__(self, names: Iterable[tuple[str, str]]) -> None:
        self._names: dict[str, set[str]] = defaultdict(set)
        self._deletes: dict[str, set[str]] = defaultdict(set)
        for name, key in names:
            if max_edits(name) == 0:
                continue
            self._names[name].add(key)
        for name in self._names:
            for variant in _deletes(name, max_edits(name)):
                self._deletes[variant].add(name)

    def __len__(self) -> int:
        return len(self._names)

    def lookup(self, text: str) -> list[tuple[int, str, str]]:
        """(distance, name, key) for every indexed name within its own edit bound of `text`."""
        if len(text) < MIN_FUZZY_CHARS - 2:
            return []
        candidates: set[str] = set()
        for variant in _deletes(text, 2):
            candidates |= self._deletes.get(variant, set())
        found: list[tuple[int, str, str]] = []
        for name in candidates:
            bound = max_edits(name)
            dist = osa_distance(text, name, bound)
            if dist <= bound:
                found.extend((dist, name, key) for key in self._names[name])
        found.sort()
        return found
