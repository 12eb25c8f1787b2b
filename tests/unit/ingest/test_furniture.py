"""Page furniture found by what repeats across pages: headers and footers of several lines in any order,
the folio from whichever line carries a number advancing with the page, folios inferred from agreeing
neighbours (and counted), a short paragraph set apart at the top of the body never taken for a header."""

from __future__ import annotations

from ingest.layout import Span, TextLine
from ingest.running import build_page_map, detect_running, inferred_pages

W, H = 595.0, 842.0
BOOK = "Dược thư quốc gia Việt Nam"
NAMES = [
    "Abacavir",
    "Abacavir",
    "Acarbose",
    "Acarbose",
    "Acebutolol",
    "Acebutolol",
    "Acenocoumarol",
    "Alopurinol",
]


def line(
    text: str,
    x0: float,
    y0: float,
    page: int,
    size: float = 9.5,
    width: float | None = None,
    bold: bool = False,
    italic: bool = False,
) -> TextLine:
    x1 = x0 + (width if width is not None else 4.6 * len(text))
    bbox = (x0, y0, x1, y0 + size * 1.2)
    return TextLine(
        spans=[Span(text, size=size, bold=bold, italic=italic, bbox=bbox, baseline=y0 + size)],
        page=page,
        bbox=bbox,
    )


WORDS = [
    "thuốc",
    "hấp",
    "thu",
    "nhanh",
    "qua",
    "đường",
    "tiêu",
    "hóa",
    "thải",
    "trừ",
    "chủ",
    "yếu",
    "thận",
    "dưới",
    "dạng",
    "không",
    "đổi",
    "nồng",
    "độ",
    "đỉnh",
    "đạt",
    "sau",
    "giờ",
    "nửa",
    "đời",
    "kéo",
    "dài",
    "người",
    "cao",
    "tuổi",
    "suy",
    "gan",
    "cần",
    "giảm",
    "liều",
    "theo",
    "dõi",
    "chức",
]


def prose(page: int, i: int, column: int) -> str:
    """A line of text that differs from page to page in its words (not only in its digits)."""
    start = (page * 13 + i * 7 + column * 5) % len(WORDS)
    return " ".join((WORDS * 2)[start : start + 9])


def body(page: int, first_y: float = 72.0, rows: int = 60) -> list[TextLine]:
    """Two columns of body text, with a heading (space above it) now and then, at another height on every
    page; the columns end at different heights (a ragged foot)."""
    out: list[TextLine] = []
    y = first_y
    for i in range(rows):
        if (i * 7 + page * 5) % 11 == 3:
            y += 8.0  # space before a heading
            out.append(line(prose(page, i, 2)[:18], 50, y, page, bold=True, width=50))
        else:
            out.append(line(prose(page, i, 0), 50, y, page, width=232))
        out.append(line(prose(page, i, 1), 312, y, page, width=232))
        y += 12.4
        if y > 770 - 9 * (page % 3):
            break
    return out


def texts(result: object, pages: list[tuple[int, float, float, list[TextLine]]], page: int) -> set[str]:
    lines = next(ls for p, _w, _h, ls in pages if p == page)
    return {lines[i].text for i in result.removed[page]}  # type: ignore[attr-defined]


def test_two_line_header_small_title_above_folio_and_name_line() -> None:
    pages = []
    for p in range(1, 9):
        odd = p % 2 == 1
        header = [
            line(BOOK, 240, 30, p, 7.0, width=115, italic=True),
            line(str(40 + p), 530 if odd else 50, 43, p, 8.5, width=14, bold=True),
            line(NAMES[p - 1].upper(), 50 if odd else 470, 43, p, 8.5, width=70, bold=True),
        ]
        pages.append((p, W, H, header + body(p)))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {p: 40 + p for p in range(1, 9)}
    for p in range(1, 9):
        assert texts(result, pages, p) == {BOOK, str(40 + p), NAMES[p - 1].upper()}


def test_title_below_the_folio_line_and_both_orders_on_facing_pages() -> None:
    pages = []
    for p in range(1, 9):
        folio_line = f"{100 + p}   {NAMES[p - 1]}" if p % 2 == 0 else f"{NAMES[p - 1]}   {100 + p}"
        header = [
            line(folio_line, 50 if p % 2 == 0 else 440, 28, p, 9.0, width=110),
            line(BOOK.upper(), 220, 44, p, 7.0, width=150),
        ]
        pages.append((p, W, H, header + body(p)))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {p: 100 + p for p in range(1, 9)}
    assert all(len(result.removed[p]) == 2 for p in range(1, 9))


def test_footer_of_two_lines_folio_in_either_corner_and_a_header_at_body_size() -> None:
    pages = []
    for p in range(1, 9):
        left = p % 3 != 0
        lines = [
            line(NAMES[p - 1], 260, 40, p, 9.5, width=60, italic=True),
            *body(p),
            line(f"- {7 + p} -", 50 if left else 520, 790, p, 8.0, width=25),
            line("Chuyên luận thuốc", 250, 803, p, 7.0, width=70),
        ]
        pages.append((p, W, H, lines))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {p: 7 + p for p in range(1, 9)}
    for p in range(1, 9):
        assert texts(result, pages, p) == {NAMES[p - 1], f"- {7 + p} -", "Chuyên luận thuốc"}


def test_three_header_lines_set_apart_from_one_another() -> None:
    pages = []
    for p in range(1, 9):
        header = [
            line(BOOK.upper(), 230, 14, p, 7.0, width=120),
            line("Chuyên luận", 270, 30, p, 7.5, width=40, italic=True),
            line(NAMES[p - 1], 260, 46, p, 9.5, width=60, bold=True),
        ]  # body size, no number
        footer = [line(str(300 + p), 290, 800, p, 9.5, width=16)]
        pages.append((p, W, H, header + body(p) + footer))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {p: 300 + p for p in range(1, 9)}
    assert all(len(result.removed[p]) == 4 for p in range(1, 9))


def test_a_short_paragraph_set_apart_at_the_top_of_the_body_is_not_furniture() -> None:
    # Most pages begin with a heading and a one-line paragraph set apart by the space before the next
    # heading (a short section); the space differs from page to page, the text too.
    pages = []
    for p in range(1, 9):
        header = [line(BOOK, 240, 30, p, 7.0, width=115), line(str(p), 520, 43, p, 8.5, width=8)]
        top = [
            line(["Thông tin quy chế", "Tên thương mại", "Tương kỵ"][p % 3], 50, 72, p, bold=True, width=80),
            line(f"Thuốc kê đơn (hư cấu) {p}.", 50, 84, p, width=100),
        ]
        below = 106 + 3 * (p % 4)
        rest = [line("Quá liều và xử trí", 50, below, p, bold=True, width=70), *body(p, first_y=below + 13)]
        pages.append((p, W, H, header + top + rest))
    result = detect_running(pages, body_size=9.5)
    for p in range(1, 9):
        assert texts(result, pages, p) == {BOOK, str(p)}


def test_the_folio_is_the_number_that_advances_with_the_page() -> None:
    pages = []
    for p in range(1, 9):
        chapter = 3 if p <= 4 else 4  # a chapter number at the edge of a header line: not advancing
        header = [
            line(f"Chương {chapter}", 50, 30, p, 8.0, width=40),
            line(f"{NAMES[p - 1]} {60 + p}", 420, 30, p, 8.0, width=120),
        ]
        pages.append((p, W, H, header + body(p)))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {p: 60 + p for p in range(1, 9)}


def test_a_folio_that_cannot_be_read_is_inferred_from_agreeing_neighbours_and_counted() -> None:
    pages = []
    for p in range(1, 9):
        header = (
            []
            if p == 5
            else [line(BOOK, 240, 30, p, 7.0, width=115), line(str(20 + p), 520, 43, p, 8.5, width=12)]
        )
        pages.append((p, W, H, header + body(p)))
    result = detect_running(pages, body_size=9.5)
    assert result.folios[5] is None and not result.removed[5]
    page_map = build_page_map(result.folios)
    assert page_map[5] == 25
    assert inferred_pages(result.folios, page_map) == [5]
    misread: dict[int, int | None] = {1: 11, 2: 12, 3: 99, 4: 14, 5: None, 6: 16}
    assert inferred_pages(misread, build_page_map(misread)) == [3, 5]
    # neighbours that disagree: nothing is inferred, nothing counted
    apart: dict[int, int | None] = {1: 11, 2: None, 3: 40}
    assert build_page_map(apart)[2] is None and inferred_pages(apart, build_page_map(apart)) == []


def test_a_header_of_two_lines_on_a_short_document_falls_back_to_the_edge_stack() -> None:
    pages = []
    for p in (1, 2):
        header = [
            line(BOOK, 240, 30, p, 7.0, width=115),
            line(f"{p + 10}   ZELVORIN", 50, 42, p, 8.5, width=90, bold=True),
        ]
        pages.append((p, W, H, header + body(p)))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {1: 11, 2: 12}
    assert texts(result, pages, 1) == {BOOK, "11   ZELVORIN"}
