"""Age and weight bounds of a dose as a formulary sentence states them, and whether a patient is outside.

"Trẻ em từ 6 tuổi: ..." bounds ages from 6 years; "trẻ dưới 2 tuổi", "2 - 5 tuổi", "từ sáu tháng",
"trên 40 kg" likewise (rules.toml [bounds]: comparators, "to", units; number words from situation.toml).
A patient is outside when the sentences about their group give at least one bound of the patient's kind
(age, weight) and none of them contains the patient: for a 4-year-old, "từ 6 tuổi" alone says the book gives
no dose at that age, while "từ 6 tuổi" and "2 - 5 tuổi" together cover it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_server.text.match import Phrases, Tok, match_at, tokenize, words
from rag_server.vocabulary.rules import BoundWords

AGE = "age"
WEIGHT = "weight"
# marks the tokenizer drops, spelled as the words they stand for ("2 - 5 tuổi", "< 20 kg")
_MARKS = (
    (re.compile(r"(?<=\d)\s*[-–]\s*(?=\d)"), " đến "),
    (re.compile(r"≤|<=|<"), " dưới "),
    (re.compile(r"≥|>=|>"), " từ "),
)


@dataclass(frozen=True)
class Bound:
    kind: str  # AGE (in years) | WEIGHT (in kg)
    low: float  # inclusive
    high: float  # exclusive
    text: str  # as the sentence says it

    def contains(self, value: float) -> bool:
        return self.low <= value < self.high


def bounds_in(text: str, words_of: BoundWords, numbers: Sequence[tuple[tuple[str, ...], int]]) -> list[Bound]:
    """Every bound the sentence states, in order."""
    for mark, spelled in _MARKS:
        text = mark.sub(spelled, text)
    ws = words(tokenize(text))
    out: list[Bound] = []
    i = 0
    while i < len(ws):
        found = _bound_at(ws, i, words_of, numbers, text)
        if found is None:
            i += 1
            continue
        bound, i = found
        out.append(bound)
    return out


def outside(value: float, kind: str, bounds: Iterable[Bound]) -> list[Bound]:
    """The bounds of `kind` when there are some and none contains `value`; [] otherwise."""
    same = [b for b in bounds if b.kind == kind]
    if not same or any(b.contains(value) for b in same):
        return []
    return same


def _length(ws: Sequence[Tok], i: int, phrases: Phrases) -> int:
    if i >= len(ws):
        return 0
    return max((len(p) for p in phrases.by_first.get(ws[i].folded, ()) if match_at(ws, i, p)), default=0)


def _number(
    ws: Sequence[Tok], i: int, numbers: Sequence[tuple[tuple[str, ...], int]]
) -> tuple[float, int] | None:
    if i >= len(ws):
        return None
    tok = ws[i]
    if tok.folded.isdigit():
        # "1,5" is tokenized as "1" "," "5": a decimal comma joins them
        return float(tok.folded), 1
    for key, value in numbers:
        n = len(key)
        if i + n <= len(ws) and all(ws[i + k].folded == key[k] for k in range(n)):
            return float(value), n
    return None


def _bound_at(
    ws: Sequence[Tok], i: int, bw: BoundWords, numbers: Sequence[tuple[tuple[str, ...], int]], text: str
) -> tuple[Bound, int] | None:
    """A bound starting at word i: [comparator] number [to number] unit; (bound, next index)."""
    j = i
    at_least = _length(ws, j, bw.at_least)
    below = 0 if at_least else _length(ws, j, bw.below)
    j += at_least or below
    first = _number(ws, j, numbers)
    if first is None:
        return None
    low, width = first
    j += width
    high: float | None = None
    to = _length(ws, j, bw.to)
    if to:
        second = _number(ws, j + to, numbers)
        if second is not None:
            high, width = second
            j += to + width
    scale, kind = 1.0, ""
    for phrases, unit_scale, unit_kind in (
        (bw.months, 1 / 12, AGE),
        (bw.years, 1.0, AGE),
        (bw.kilograms, 1.0, WEIGHT),
    ):
        n = _length(ws, j, phrases)
        if n:
            scale, kind = unit_scale, unit_kind
            j += n
            break
    if not kind or not (at_least or below or high is not None):
        return None
    span = text[ws[i].start : ws[j - 1].end]
    if high is not None:
        return Bound(
            kind, low * scale, high * scale + (1.0 if kind == AGE and scale == 1.0 else 0.0), span
        ), j
    if below:
        return Bound(kind, 0.0, low * scale, span), j
    return Bound(kind, low * scale, math.inf, span), j
