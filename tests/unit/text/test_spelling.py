"""Spelling variants of drug names share one key; typos are bounded by length."""

from __future__ import annotations

import pytest

from rag_server.text.spelling import MAX_KEY_CHARS, inn_key, within_typo


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("theophylline", "theophylin"),
        ("theofylin", "theophylin"),
        ("amoxicillin", "amoxicilin"),
        ("cephalexin", "cefalexin"),
        ("allopurinol", "alopurinol"),
        ("lithium", "lithi"),
        ("amlodipine", "amlodipin"),
        ("furosemide", "furosemid"),
        ("methotrexate", "methotrexat"),
        ("hydrochlorothiazide", "hydroclorothiazid"),
        ("Ciprofloxacin", "CIPROFLOXACIN"),
        ("sulphate", "sulfat"),
    ],
)
def test_variants_share_a_key(a: str, b: str) -> None:
    assert inn_key(a) == inn_key(b) != ""


@pytest.mark.parametrize(("a", "b"), [("metformin", "metoprolol"), ("atenolol", "amlodipin"), ("sat", "sot")])
def test_different_names_keep_different_keys(a: str, b: str) -> None:
    assert inn_key(a) != inn_key(b)


def test_typos_are_bounded_by_length() -> None:
    assert within_typo(inn_key("isoniazd"), inn_key("isoniazid")) == 1  # 9 letters: up to 2 edits
    assert within_typo(inn_key("verapaml"), inn_key("verapamil")) == 1
    assert within_typo(inn_key("aspirn"), inn_key("aspirin")) == 1  # 7 letters: 1 edit
    assert within_typo(inn_key("asprn"), inn_key("aspirin")) is None  # 2 edits on a short name
    assert within_typo(inn_key("dgxn"), inn_key("digoxin")) is None
    assert within_typo("abcd", "abce") is None  # 4 letters: exact only


def test_long_or_letterless_words_have_no_key() -> None:
    assert inn_key("x" * (MAX_KEY_CHARS + 1)) == ""
    assert inn_key("12345") == ""
    assert inn_key("💊") == ""
