"""Formula regions (fraction bars, dense sub/superscripts) are flagged for a visual check; tables flatten."""

from __future__ import annotations

from ingest.layout import Span, TextLine
from ingest.regions import flatten_rows, mark_formulas


def line(text: str, x0: float, y0: float, width: float, size: float = 9.5, spans: list[Span] | None = None
         ) -> TextLine:
    bbox = (x0, y0, x0 + width, y0 + size * 1.3)
    return TextLine(spans=spans or [Span(text, size=size, bbox=bbox)], page=1, bbox=bbox)


def test_fraction_layout_is_flagged() -> None:
    numerator = line("(140 - tuổi) × cân nặng", 120, 100, 110)
    lhs = line("Clcr =", 60, 108, 40)
    denominator = line("72 × creatinin huyết thanh", 115, 116, 120)
    before = line("Ước tính độ thanh thải creatinin:", 50, 84, 230)
    after = line("Ở nữ, nhân kết quả với 0,85.", 50, 140, 230)
    lines = [before, numerator, lhs, denominator, after]
    flagged = mark_formulas(lines, [(112.0, 114.5, 240.0, 114.5)], 9.5, [])
    assert flagged == 3
    assert [ln.visual for ln in lines] == [False, True, True, True, False]


def test_underlined_heading_is_not_a_formula() -> None:
    heading = line("Liều dùng", 50, 100, 45)
    body = line("Người lớn uống 500 mg mỗi 12 giờ trong 7 ngày.", 50, 113, 230)
    lines = [heading, body]
    assert mark_formulas(lines, [(50.0, 112.5, 95.0, 112.5)], 9.5, []) == 0
    assert not heading.visual and not body.visual


def test_rules_inside_a_table_are_ignored() -> None:
    cell_a = line("> 50", 52, 100, 20)
    cell_b = line("500 mg", 52, 116, 30)
    lines = [cell_a, cell_b]
    assert mark_formulas(lines, [(50.0, 114.0, 90.0, 114.0)], 9.5, [(48.0, 95.0, 250.0, 140.0)]) == 0


def test_many_small_spans_in_a_line_are_flagged() -> None:
    spans = [Span("C", size=9.5), Span("20", size=6.5), Span("H", size=9.5), Span("25", size=6.5),
             Span("N", size=9.5), Span("3", size=6.5),
             Span("O", size=9.5)]
    dense = line("C20H25N3O", 50, 100, 60, spans=spans)
    one_sub = line("beta1", 50, 120, 30, spans=[Span("beta", size=9.5), Span("1", size=6.5)])
    assert mark_formulas([dense, one_sub], [], 9.5, []) == 1
    assert dense.visual and not one_sub.visual


def test_flatten_rows_keys_cells_by_header() -> None:
    rows = [["Clcr (ml/phút)", "Liều\ndùng"], ["> 50", "500 mg"], ["", ""], ["10 - 29", "250 mg mỗi 24 giờ"]]
    assert flatten_rows(rows) == ["Clcr (ml/phút) | Liều dùng", "Clcr (ml/phút): > 50; Liều dùng: 500 mg",
                                  "Clcr (ml/phút): 10 - 29; Liều dùng: 250 mg mỗi 24 giờ"]
    assert flatten_rows([["", "a"], ["b", "c"]]) == [" | a", "b | c"]
