"""Bounded typo tolerance for drug names: a deletion-neighbourhood index (SymSpell style) so a lookup never
scans the whole catalog, its candidates compared by the one edit distance (text.spelling.osa_distance).

Bounds (on the folded name): < 5 characters no fuzzy match, 5-8 characters at most 1 edit,
9 or more at most 2 edits; an entry may cap its bound lower (brands: 1 edit).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rag_server.text.spelling import MAX_TYPO_EDITS, MIN_TYPO_CHARS, osa_distance, typo_bound

MIN_FUZZY_CHARS = MIN_TYPO_CHARS
LONG_BOUND = MAX_TYPO_EDITS
max_edits = typo_bound  # the bound of a folded name (text.spelling: one typo rule for the service)


def _deletes(word: str, depth: int) -> set[str]:
    """`word` and every string made from it by deleting up to `depth` characters."""
    out = {word}
    frontier = {word}
    for _ in range(min(depth, len(word))):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        out |= frontier
    return out


class FuzzyIndex:
    """name (folded, words joined by one space) -> keys; lookup returns (distance, name, key) within bounds.

    An entry may cap its name's bound (`cap`): brands are indexed with at most one edit, because a
    formulary lists tens of thousands of them (a two-edit deletion index over them costs ~10 s and
    ~200 MB to build) and two edits among that many names would find look-alikes of nearly any word.
    """

    def __init__(self, names: Iterable[tuple[str, str] | tuple[str, str, int]]) -> None:
        self._names: dict[str, set[str]] = defaultdict(set)
        self._bounds: dict[str, int] = {}
        self._deletes: dict[str, list[str]] = defaultdict(list)
        for entry in names:
            name, key = entry[0], entry[1]
            bound = min(max_edits(name), entry[2] if len(entry) > 2 else LONG_BOUND)
            if bound == 0:
                continue
            self._names[name].add(key)
            self._bounds[name] = max(bound, self._bounds.get(name, 0))
        for name, bound in self._bounds.items():
            for variant in _deletes(name, bound):
                self._deletes[variant].append(name)

    def __len__(self) -> int:
        return len(self._names)

    def bound(self, name: str) -> int:
        return self._bounds.get(name, 0)

    def lookup(self, text: str) -> list[tuple[int, str, str]]:
        """(distance, name, key) for every indexed name within its own edit bound of `text`."""
        if len(text) < MIN_FUZZY_CHARS - 2:
            return []
        candidates: set[str] = set()
        for variant in _deletes(text, LONG_BOUND):
            candidates.update(self._deletes.get(variant, ()))
        found: list[tuple[int, str, str]] = []
        for name in candidates:
            bound = self._bounds[name]
            dist = osa_distance(text, name, bound)
            if dist <= bound:
                found.extend((dist, name, key) for key in self._names[name])
        found.sort()
        return found
