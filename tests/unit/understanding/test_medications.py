"""Medicines as clinicians type them: lists, doses, units, forms, routes, frequencies, parentheses."""

from __future__ import annotations

import pytest

from rag_server.understanding.medications import MAX_ENTRY_CHARS, name_keys, split_entry
from rag_server.vocabulary.clinical import load_clinical

RULES = load_clinical().medication


@pytest.mark.parametrize(
    ("entry", "names"),
    [
        ("zelvorin 200 mg", ["zelvorin"]),
        ("zelvorin (uống)", ["zelvorin"]),
        ("Zelvorin 2 lần/ngày", ["zelvorin"]),
        ("Ibuprofen 400mg x 3 lần/ngày", ["ibuprofen"]),
        ("zelvorin, warfarin", ["zelvorin", "warfarin"]),
        ("zelvorin; warfarin 5 mg", ["zelvorin", "warfarin"]),
        ("zelvorin và warfarin", ["zelvorin", "warfarin"]),
        ("zelvorin + aspirin 81mg", ["zelvorin", "aspirin"]),
        ("Bactrim (cotrimoxazol) 2 viên/ngày", ["bactrim", "cotrimoxazol"]),
        ("miconazole gel bôi ngoài da", ["miconazole"]),
        ("levofloxacin 750mg (truyền tĩnh mạch)", ["levofloxacin"]),
        ("metformin XR 500 mg tối", ["metformin"]),
        ("", []),
        ("200 mg", []),
        ("💊💊", []),
    ],
)
def test_names_are_read_from_what_clinicians_type(entry: str, names: list[str]) -> None:
    assert split_entry(entry, RULES) == names


def test_salts_are_not_matched_and_ions_only_when_nothing_else_is_named() -> None:
    assert name_keys("lithium carbonate", RULES) == ("liti",)
    assert name_keys("natri valproat", RULES) == ("valproat",)
    assert name_keys("verapamil hydroclorid", RULES) == ("verapamil",)
    assert name_keys("kali clorid", RULES) == ("kali",)


def test_an_entry_is_bounded() -> None:
    names = split_entry("a" * 10_000 + ", " + "zelvorin", RULES)
    assert all(len(n) <= MAX_ENTRY_CHARS for n in names)
    assert len(split_entry(", ".join(f"thuoc{i}" for i in range(100)), RULES)) <= 6
