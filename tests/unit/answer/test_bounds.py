"""Age and weight bounds read from a dosing sentence, and whether a patient lies outside them."""

from __future__ import annotations

import math

import pytest

from rag_server.answer.bounds import AGE, WEIGHT, bounds_in, outside
from rag_server.vocabulary.language import load_language

LANGUAGE = load_language()
assert LANGUAGE.rules.bounds is not None
WORDS = LANGUAGE.rules.bounds
NUMBERS = [(p.folded, v) for p, v in LANGUAGE.situations.numbers]


def _read(text: str) -> list[tuple[str, float, float]]:
    return [(b.kind, b.low, b.high) for b in bounds_in(text, WORDS, NUMBERS)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Trẻ em từ 6 tuổi: 5 mg/kg/ngày.", [(AGE, 6.0, math.inf)]),
        ("Trẻ dưới 2 tuổi: không dùng.", [(AGE, 0.0, 2.0)]),
        ("Trẻ 2 - 5 tuổi: 2,5 mg.", [(AGE, 2.0, 6.0)]),  # "5 tuổi" includes the fifth year
        ("Trẻ từ sáu tháng: 1 gói.", [(AGE, 0.5, math.inf)]),
        ("Trẻ trên 40 kg: liều người lớn.", [(WEIGHT, 40.0, math.inf)]),
        ("Uống 10 mg mỗi ngày.", []),  # a dose is not a bound
    ],
)
def test_bounds_are_read_as_the_sentence_writes_them(
    text: str, expected: list[tuple[str, float, float]]
) -> None:
    assert _read(text) == expected


def test_a_patient_is_outside_only_when_no_bound_of_their_kind_contains_them() -> None:
    from_six = bounds_in("Trẻ em từ 6 tuổi: 5 mg/kg.", WORDS, NUMBERS)
    two_to_five = bounds_in("Trẻ 2 - 5 tuổi: 2,5 mg.", WORDS, NUMBERS)
    assert [b.text for b in outside(4, AGE, from_six)] == ["từ 6 tuổi"]
    assert outside(4, AGE, [*from_six, *two_to_five]) == []  # together they cover 4 years
    assert outside(7, AGE, from_six) == []
    assert outside(30, WEIGHT, from_six) == []  # no weight bound: nothing said about weight
