"""Tables without a grid, found by structure: rules of one extent around aligned rows (top/header/bottom,
under every row, top and bottom only, a table broken at a column end), aligned columns without rules; and
the prose that must never become a table (indented text, short lines, the page's two columns, justified
sparse lines, a boxed paragraph, a heading after a table)."""

from __future__ import annotations

from ingest.layout import Span, TextLine
from ingest.tables import Token, find_text_tables, ruled_tables, unruled_tables

SIZE = 8.0
LEAD = 9.6


def word_tokens(text: str, x: float, y: float, size: float = SIZE) -> list[Token]:
    """The words of `text` set from x on baseline-box top y (4.2 pt a character, a 2.2 pt space)."""
    out: list[Token] = []
    for word in text.split():
        width = 4.2 * len(word) * size / SIZE
        out.append(Token(word, (x, y, x + width, y + size * 1.15), size))
        x += width + 2.2 * size / SIZE
    return out


def piece(text: str, x: float, y: float, size: float = SIZE, bold: bool = False) -> TextLine:
    width = 4.2 * len(text) * size / SIZE
    bbox = (x, y, x + width, y + size * 1.15)
    return TextLine(spans=[Span(text, size=size, bold=bold, bbox=bbox, baseline=y + size)], page=1, bbox=bbox)


# A FICTIONAL dose table (made-up values, not medical information).
DOSES = [
    ("Clcr hư cấu (ml/phút)", "Liều uống"),
    ("> 50", "500 mg mỗi 12 giờ"),
    ("30 - 50", "250 mg mỗi 12 giờ"),
    ("10 - 29", "250 mg mỗi 24 giờ"),
    ("< 10", "125 mg mỗi 24 giờ"),
]


def draw(
    rows: list[tuple[str, str]], top: float, x0: float = 50.0, second: float = 200.0, pad: float = 2.0
) -> tuple[list[Token], list[TextLine], list[float]]:
    """Words, pieces and the y of the boundary under each row of a two-column table; a first cell of 20
    characters or more wraps after its second word."""
    words: list[Token] = []
    pieces: list[TextLine] = []
    bounds: list[float] = []
    y = top + pad
    for left, right in rows:
        split = left.split()
        lines = [left] if len(left) < 20 else [" ".join(split[:2]), " ".join(split[2:])]
        for k, text in enumerate(lines):
            words += word_tokens(text, x0 + 2, y + k * LEAD)
            pieces.append(piece(text, x0 + 2, y + k * LEAD))
        words += word_tokens(right, second + 2, y)
        pieces.append(piece(right, second + 2, y))
        y += len(lines) * LEAD + 2 * pad
        bounds.append(y - pad + 1.0)
    return words, pieces, bounds


def rule(y: float, x0: float = 50.0, x1: float = 330.0) -> tuple[float, float, float, float]:
    return (x0, y, x1, y)


def test_top_header_and_bottom_rules() -> None:
    words, _, bounds = draw(DOSES, 100.0)
    rules = [rule(100.0), rule(bounds[0]), rule(bounds[-1])]
    [table] = ruled_tables(words, rules, None, (60.0, 700.0))
    assert table.rows[0] == ["Clcr hư cấu (ml/phút)", "Liều uống"]
    assert table.rows[1:] == [
        ["> 50", "500 mg mỗi 12 giờ"],
        ["30 - 50", "250 mg mỗi 12 giờ"],
        ["10 - 29", "250 mg mỗi 24 giờ"],
        ["< 10", "125 mg mỗi 24 giờ"],
    ]


def test_a_rule_under_every_row_and_two_tables_with_a_line_of_prose_between() -> None:
    words, _, bounds = draw(DOSES, 100.0)
    rules = [rule(100.0), *(rule(b) for b in bounds)]
    between = word_tokens("Đường tiêm (hư cấu):", 52, bounds[-1] + 10)
    words2, _, bounds2 = draw(DOSES[:3], bounds[-1] + 28, second=170.0)
    rules += [rule(bounds[-1] + 28), *(rule(b) for b in bounds2)]
    tables = ruled_tables([*words, *between, *words2], rules, None, (60.0, 700.0))
    assert len(tables) == 2
    assert [row[1] for row in tables[0].rows] == [
        "Liều uống",
        "500 mg mỗi 12 giờ",
        "250 mg mỗi 12 giờ",
        "250 mg mỗi 24 giờ",
        "125 mg mỗi 24 giờ",
    ]
    assert tables[1].rows[-1] == ["30 - 50", "250 mg mỗi 12 giờ"]
    assert not any("tiêm" in cell for t in tables for row in t.rows for cell in row)


def test_top_and_bottom_rules_only_rows_told_apart_by_their_spacing() -> None:
    words, _, bounds = draw(DOSES, 100.0, pad=3.0)
    [table] = ruled_tables(words, [rule(100.0), rule(bounds[-1])], None, (60.0, 700.0))
    assert table.rows[0][0] == "Clcr hư cấu (ml/phút)"
    assert len(table.rows) == 5


def test_a_table_broken_at_the_end_of_a_column_with_a_rule_on_one_side_only() -> None:
    # Top and header rules, then rows up to the foot of the column (no bottom rule there) ...
    words, _, bounds = draw(DOSES, 650.0)
    [first] = ruled_tables(words, [rule(650.0), rule(bounds[0])], None, (60.0, bounds[-1]))
    assert len(first.rows) == 5
    # ... and on the next page the rows from the head of the column down to a single bottom rule.
    rest, _, ends = draw([("< 5", "125 mg mỗi 48 giờ"), ("thẩm phân", "125 mg sau lọc")], 70.0)
    prose = word_tokens("Tương tác: dùng cùng zelvorin tăng nồng độ (hư cấu).", 52, ends[-1] + 12)
    [second] = ruled_tables([*rest, *prose], [rule(ends[-1])], None, (70.0, 760.0))
    assert second.rows == [["< 5", "125 mg mỗi 48 giờ"], ["thẩm phân", "125 mg sau lọc"]]


def test_a_bold_header_that_nearly_touches_the_next_column_still_heads_it() -> None:
    words, _, bounds = draw(DOSES, 100.0, second=96.0)  # "cấu (ml/phút)" ends 0.6 pt before the 2nd column
    [table] = ruled_tables(words, [rule(100.0), rule(bounds[0]), rule(bounds[-1])], None, (60.0, 700.0))
    assert table.rows[0] == ["Clcr hư cấu (ml/phút)", "Liều uống"]
    assert table.rows[2] == ["30 - 50", "250 mg mỗi 12 giờ"]


def test_unruled_aligned_columns() -> None:
    _, pieces, _ = draw(DOSES, 100.0, second=220.0, pad=1.0)
    found = unruled_tables(pieces, None)
    [table] = found.tables
    assert table.rows[1] == ["> 50", "500 mg mỗi 12 giờ"] and len(table.rows) == 5


def test_the_page_furniture_rules_and_a_heading_after_a_table_are_left_alone() -> None:
    words, _, bounds = draw(DOSES, 100.0)
    heading = word_tokens("Tương tác thuốc", 52, bounds[-1] + 12, size=9.5)
    rules = [
        rule(100.0),
        rule(bounds[0]),
        rule(bounds[-1]),
        rule(40.0, 50.0, 545.0),
        rule(800.0, 50.0, 545.0),
    ]  # a header and a footer rule
    [table] = ruled_tables([*words, *heading], rules, None, (100.0, 760.0))
    assert table.bbox[3] <= bounds[-1] + 1.0
    assert not any("Tương" in cell for row in table.rows for cell in row)


# --- never a table ---------------------------------------------------------------------------------------


def paragraph(x: float, y: float, n: int, width_chars: int = 55, indent: float = 0.0) -> list[TextLine]:
    text = "thuốc được hấp thu nhanh qua đường tiêu hóa và thải trừ chủ yếu qua thận"
    return [
        piece((text * 2)[i * 3 : i * 3 + width_chars], x + (indent if i == 0 else 0.0), y + i * LEAD)
        for i in range(n)
    ]


def test_indented_prose_and_a_list_of_short_lines_are_not_tables() -> None:
    lines = paragraph(50, 100, 6, indent=12.0)
    items = ["Người lớn: 500 mg", "Trẻ em: 10 mg/kg", "Người cao tuổi: 250 mg", "Suy thận: giảm liều"]
    lines += [piece(f"- {item}", 62, 170 + i * LEAD) for i, item in enumerate(items)]
    found = find_text_tables(1, lines, [], [], None)
    assert found.regions == [] and found.verify == []


def test_two_columns_of_prose_whose_gutter_was_not_found_are_not_a_table() -> None:
    left = paragraph(50, 100, 12, width_chars=56)
    right = paragraph(312, 100, 12, width_chars=56)
    for ln in right:  # justified: every line reaches the column's right edge
        ln.bbox = (312.0, ln.y0, 547.0, ln.y1)
    for ln in left:
        ln.bbox = (50.0, ln.y0, 285.0, ln.y1)
    found = find_text_tables(1, [*left, *right], [], [], None)
    assert found.regions == []


def test_sparse_justified_lines_drawn_word_by_word_are_not_a_table() -> None:
    lines: list[TextLine] = []
    for i, words in enumerate(
        [
            ["thuốc", "hư", "cấu,", "zelvorin"],
            ["keptralon", "và", "travoxan"],
            ["lumiprazolium", "(hư cấu)."],
            ["đường", "tiêu", "hóa."],
        ]
    ):
        widths = [4.2 * len(w) for w in words]
        gap = (150.0 - sum(widths)) / (len(words) - 1)
        x = 208.0
        for word, width in zip(words, widths, strict=True):
            lines.append(piece(word, x, 100 + i * LEAD))
            x += width + gap
    lines += paragraph(208, 140, 4, width_chars=34)
    assert find_text_tables(1, lines, [], [], None).regions == []


def test_a_boxed_paragraph_between_two_rules_is_not_a_table() -> None:
    lines = paragraph(52, 104, 4)
    words = [w for ln in lines for w in word_tokens(ln.text, ln.x0, ln.y0)]
    assert ruled_tables(words, [rule(100.0), rule(104 + 4 * LEAD + 2)], None, (60.0, 700.0)) == []


def test_a_table_across_both_columns_whose_column_gap_falls_on_the_gutter_is_still_a_table() -> None:
    words, _, bounds = draw(DOSES, 100.0, x0=50.0, second=300.0)
    rules = [rule(100.0, 50.0, 545.0), rule(bounds[0], 50.0, 545.0), rule(bounds[-1], 50.0, 545.0)]
    [table] = ruled_tables(words, rules, 297.0, (60.0, 700.0))
    assert table.rows[1] == ["> 50", "500 mg mỗi 12 giờ"]
    # ... but two columns of prose between two rules across the page are not
    left = paragraph(50, 104, 6, width_chars=56)
    right = paragraph(312, 104, 6, width_chars=56)
    for ln in left:
        ln.bbox = (50.0, ln.y0, 285.0, ln.y1)
    for ln in right:
        ln.bbox = (312.0, ln.y0, 547.0, ln.y1)
    prose = [Token(ln.text, ln.bbox, SIZE) for ln in [*left, *right]]
    assert ruled_tables(prose, [rule(100.0, 50.0, 550.0), rule(104 + 6 * LEAD + 2, 50.0, 550.0)], 298.0,
                        (60.0, 700.0)) == []
