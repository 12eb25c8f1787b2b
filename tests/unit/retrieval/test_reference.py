"""Pointer detection: a short section that only says "see section X" (reference.py). The sentences are
written for this test (pointer wording only, no formulary content); NOT medical information."""

from __future__ import annotations

import pytest

from rag_server.retrieval.reference import MAX_POINTER_WORDS, pointer_targets, referenced_sections
from rag_server.vocabulary import load_vocabulary

_V = load_vocabulary()
ADR_HANDLING = "huong_dan_cach_xu_tri_adr"
OVERDOSE = "qua_lieu_va_xu_tri"
CAUTION = "than_trong"
ADR = "tac_dung_khong_mong_muon"


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("Xem mục Quá liều và xử trí.", OVERDOSE),
        ("Xem phần Quá liều và xử trí", OVERDOSE),
        ('Xem mục "Quá liều và xử trí".', OVERDOSE),
        ("Xem mục “Thận trọng”.", CAUTION),
        ("Ngừng thuốc (xem Thận trọng).", CAUTION),
        ("Xem thêm mục Thận trọng.", CAUTION),
        ("xem them muc qua lieu va xu tri", OVERDOSE),  # typed without diacritics
        ("XEM MỤC QUÁ LIỀU VÀ XỬ TRÍ", OVERDOSE),
        ("Ouá liều: xem mục Ouá liều và xử trí.", OVERDOSE),  # OCR slip in the heading
        # the heading is the longest run of words that is one; what follows it is ignored
        ("Xem phần Tác dụng không mong muốn (ADR) ở trên.", ADR),
        ("Xem mục Thận trọng khi dùng thuốc.", CAUTION),
        ("Xem mục Hướng dẫn cách xử trí ADR.", ADR_HANDLING),
        ("Xem mục Tác dụng không mong muốn.", ADR),
    ],
)
def test_a_short_pointer_names_its_target(text: str, target: str) -> None:
    assert pointer_targets("chi_dinh", text, _V) == [target]


@pytest.mark.parametrize(
    "text",
    [
        "Ngừng thuốc và điều trị triệu chứng.",  # no pointer
        "Xem xét giảm liều ở người cao tuổi.",  # "xem xét" is no pointer: no heading follows
        "Xem mục dưới đây.",  # no heading after "xem mục"
        "Quá liều và xử trí: rửa dạ dày.",  # a heading without "xem"
        "Xem tài liệu của nhà sản xuất.",
    ],
)
def test_no_pointer(text: str) -> None:
    assert pointer_targets("chi_dinh", text, _V) == []


def test_a_pointer_to_the_section_itself_is_ignored() -> None:
    text = "Xem mục Quá liều và xử trí."
    assert referenced_sections(text, _V) == [OVERDOSE]
    assert pointer_targets(OVERDOSE, text, _V) == []


def test_a_pointer_inside_a_long_section_is_left_alone() -> None:
    filler = " ".join(["từ"] * MAX_POINTER_WORDS)
    assert pointer_targets(ADR_HANDLING, f"{filler} Xem mục Quá liều và xử trí.", _V) == []
    short = " ".join(["từ"] * (MAX_POINTER_WORDS - 7))  # 33 + 7 words of pointer = 40: not short
    assert pointer_targets(ADR_HANDLING, f"{short} Xem mục Quá liều và xử trí.", _V) == []
    shorter = " ".join(["từ"] * (MAX_POINTER_WORDS - 8))
    assert pointer_targets(ADR_HANDLING, f"{shorter} Xem mục Quá liều và xử trí.", _V) == [OVERDOSE]


def test_several_pointers_keep_their_order_without_repeats() -> None:
    text = "Xem mục Thận trọng và xem mục Quá liều và xử trí; xem mục Thận trọng."
    assert pointer_targets(ADR_HANDLING, text, _V) == [CAUTION, OVERDOSE]
