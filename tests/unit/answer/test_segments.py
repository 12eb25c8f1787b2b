"""Segments: sentences and list items with exact spans; decimals and list numbers never split one."""

from __future__ import annotations

from rag_server.answer.segments import segments

TEXT = ("Quá mẫn với zentorin. Sốc tim; hẹp van nặng; block nhĩ thất.\n- Huyết áp dưới 90 mmHg.\n"
        "1. Người lớn: 2,5 mg/ngày. Liều 1.000 mg. Xem mục 2.")


def test_segments_are_exact_spans_in_order() -> None:
    parts = segments(TEXT)
    assert [p.text for p in parts] == [
        "Quá mẫn với zentorin.", "Sốc tim;", "hẹp van nặng;", "block nhĩ thất.", "Huyết áp dưới 90 mmHg.",
        "Người lớn: 2,5 mg/ngày.", "Liều 1.000 mg.", "Xem mục 2.",
    ]
    assert all(TEXT[p.start:p.end] == p.text for p in parts)
    assert [p.start for p in parts] == sorted(p.start for p in parts)


def test_a_lone_semicolon_joins_two_clauses_of_one_thought() -> None:
    text = "Chưa rõ thuốc có vào sữa mẹ hay không; không khuyến cáo dùng. Sốc tim; hẹp van; suy tim."
    assert [p.text for p in segments(text)] == [
        "Chưa rõ thuốc có vào sữa mẹ hay không; không khuyến cáo dùng.", "Sốc tim;", "hẹp van;", "suy tim.",
    ]


def test_nothing_but_punctuation_is_no_segment() -> None:
    assert segments(" - ; . \n") == []
