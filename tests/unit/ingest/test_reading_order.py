"""Reading order: columns by x-coverage, full-width elements split the page into bands, pieces re-joined."""

from __future__ import annotations

from ingest.layout import Span, TextLine
from ingest.reading_order import FULL_WIDTH, find_gutter, order_lines


def line(text: str, x0: float, y0: float, width: float = 230.0, size: float = 9.5) -> TextLine:
    bbox = (x0, y0, x0 + width, y0 + size * 1.3)
    return TextLine(spans=[Span(text, size=size, bbox=bbox, baseline=y0 + size)], page=1, bbox=bbox)


def test_two_columns_left_then_right() -> None:
    lines = [line(f"R{i}", 310, 60 + 13 * i) for i in range(10)]
    lines += [line(f"L{i}", 50, 60 + 13 * i) for i in range(10)]
    ordered, columns = order_lines(lines)
    assert columns == 2
    assert [ln.text for ln in ordered] == [f"L{i}" for i in range(10)] + [f"R{i}" for i in range(10)]


def test_right_column_with_few_lines_is_still_a_column() -> None:
    lines = [line(f"L{i}", 50, 60 + 13 * i) for i in range(30)]
    lines += [line("R0", 330, 60, 40), line("R1", 310, 73, 100)]
    assert find_gutter(lines) is None  # without the page width the short right column looks like a list
    assert find_gutter(lines, page_width=595) is not None
    ordered, _ = order_lines(lines, page_width=595)
    assert [ln.text for ln in ordered][-2:] == ["R0", "R1"]


def test_full_width_title_splits_the_page_into_bands() -> None:
    above = [line(f"a-L{i}", 50, 60 + 13 * i) for i in range(5)]
    above += [line(f"a-R{i}", 310, 60 + 13 * i) for i in range(5)]
    title = line("ORBIFEXIN", 250, 140, width=95, size=13)
    below = [line(f"b-L{i}", 50, 170 + 13 * i) for i in range(5)] + [
        line(f"b-R{i}", 310, 170 + 13 * i) for i in range(5)
    ]
    ordered, columns = order_lines([*below, title, *above])
    assert columns == 2
    texts = [ln.text for ln in ordered]
    assert texts == (
        [f"a-L{i}" for i in range(5)]
        + [f"a-R{i}" for i in range(5)]
        + ["ORBIFEXIN"]
        + [f"b-L{i}" for i in range(5)]
        + [f"b-R{i}" for i in range(5)]
    )
    assert title.column == FULL_WIDTH


def test_one_column_page_is_read_top_to_bottom() -> None:
    lines = [line(f"P{i}", 50, 60 + 13 * i, width=495) for i in range(12)]
    ordered, columns = order_lines(list(reversed(lines)))
    assert columns == 1
    assert [ln.text for ln in ordered] == [f"P{i}" for i in range(12)]


def test_ragged_short_lines_are_not_two_columns() -> None:
    lines = [line(f"- mục {i}", 50, 60 + 13 * i, width=60) for i in range(10)]
    lines += [line("ghi chú", 400, 60, 40), line("ghi chú 2", 400, 80, 40)]
    assert find_gutter(lines) is None
    assert find_gutter(lines, page_width=595) is None


def test_pieces_on_one_baseline_are_merged_in_x_order() -> None:
    left = line("Viên nén", 50, 60, width=40)
    right = line("500 mg", 150, 60, width=30)
    sup = TextLine(
        spans=[Span("2", size=6.5, bbox=(180.5, 58, 184, 65), baseline=63)], page=1, bbox=(180.5, 58, 184, 65)
    )
    ordered, _ = order_lines([right, sup, left])
    assert [ln.text for ln in ordered] == ["Viên nén 500 mg2"]


def test_a_right_column_of_sparse_justified_lines_drawn_word_by_word_is_still_a_column() -> None:
    lines = [line(f"L{i}", 48, 60 + 11 * i, width=249) for i in range(12)]
    for i in range(12):
        if i % 3 == 1:  # a sparse line: its words set wide apart, each a piece of its own
            lines += [
                line(w, x, 60 + 11 * i, width=30)
                for w, x in (("Zelvocard;", 306), ("Normazel;", 348), ("Keptra;", 440), ("Travox;", 522))
            ]
        else:
            lines.append(line(f"R{i}", 306, 60 + 11 * i, width=249))
    assert find_gutter(lines, 595) is not None
    ordered, columns = order_lines(lines, 595)
    assert columns == 2 and [ln.text for ln in ordered][:12] == [f"L{i}" for i in range(12)]
