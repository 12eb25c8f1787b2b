"""Running headers/footers: detection by margin band + mark/repetition/number, folio at the outer edge, and
the physical -> printed page map (interpolated between agreeing neighbours, never extrapolated)."""

from __future__ import annotations

from ingest.layout import Span, TextLine
from ingest.running import RunningRow, build_page_map, detect_running, folio_of

W, H = 595.0, 842.0


def line(text: str, x0: float, y0: float, page: int = 1, size: float = 9.5,
         width: float | None = None) -> TextLine:
    x1 = x0 + (width if width is not None else 5.0 * len(text))
    bbox = (x0, y0, x1, y0 + size * 1.3)
    return TextLine(spans=[Span(text, size=size, bbox=bbox, baseline=y0 + size)], page=page, bbox=bbox)


def row(*pieces: TextLine) -> RunningRow:
    return RunningRow(page=1, where="top", lines=list(pieces), gap=20.0, page_width=W)


def body(page: int, first_y: float = 64.0, n: int = 40) -> list[TextLine]:
    out = []
    for i in range(n):
        y = first_y + i * 13
        out.append(line("Thuốc được hấp thu nhanh qua đường tiêu hóa và thải trừ qua thận.", 50, y, page,
                        width=230))
        out.append(line("Nồng độ đỉnh đạt sau 2 giờ; nửa đời thải trừ khoảng 6 giờ ở người lớn.", 310, y,
                        page, width=230))
    return out


def test_folio_is_the_number_at_the_outer_edge_not_the_edition() -> None:
    even = row(line("102", 50, 30, size=8), line("Abacavir", 80, 30, size=8),
               line("DTQGVN 2", 500, 30, size=8))
    odd = row(line("DTQGVN 2", 50, 30, size=8), line("Acarbose", 460, 30, size=8),
              line("103", 530, 30, size=8))
    merged = row(line("104 Acarbose DTQGVN 2", 50, 30, size=8, width=495))
    odd_merged = row(line("DTQGVN 2 Acebutolol 105", 50, 30, size=8, width=495))
    assert folio_of(even) == 102
    assert folio_of(odd) == 103
    assert folio_of(merged) == 104
    assert folio_of(odd_merged) == 105
    assert folio_of(row(line("DTQGVN 2", 50, 30, size=8))) is None
    assert folio_of(row(line("— 207 —", 280, 800, size=8))) == 207
    assert folio_of(row(line("Trang 12", 280, 800, size=8))) == 12


def _pages(headers: dict[int, list[TextLine]], n: int = 6) -> list[tuple[int, float, float, list[TextLine]]]:
    return [(p, W, H, headers.get(p, []) + body(p)) for p in range(1, n + 1)]


def test_headers_with_mark_are_removed_and_folios_read() -> None:
    headers = {p: [line(str(100 + p), 50, 30, p, 8), line("Zelvorin", 80, 30, p, 8),
                   line("DTQGVN 2", 500, 30, p, 8)] for p in range(1, 7)}
    pages = _pages(headers)
    result = detect_running(pages, body_size=9.5)
    for p, _w, _h, lines in pages:
        removed = {lines[i].text for i in result.removed[p]}
        assert removed == {str(100 + p), "Zelvorin", "DTQGVN 2"}
        assert result.folios[p] == 100 + p


def test_repeated_running_piece_without_mark_is_a_header() -> None:
    names = ["Zelvorin", "Zelvorin", "Travoxan", "Keptralon", "Keptralon", "Orbifexin"]
    headers = {p: [line("DƯỢC THƯ MẪU", 50, 30, p, 8), line(names[p - 1], 430, 30, p, 8),
                   line(str(200 + p), 530, 30, p, 8)] for p in range(1, 7)}
    result = detect_running(_pages(headers), body_size=9.5, marks=("DTQGVN",))
    assert [result.folios[p] for p in range(1, 7)] == [201, 202, 203, 204, 205, 206]
    assert all(len(result.removed[p]) == 3 for p in range(1, 7))


def test_first_body_line_at_the_top_is_not_a_header() -> None:
    # No running header: the top row is body text (it even starts with a number), not set apart by a gap.
    pages = [(p, W, H, [line("500 mg mỗi 12 giờ trong 7 ngày, uống sau ăn.", 50, 40, p, width=230),
                        *body(p, first_y=53)]) for p in range(1, 5)]
    result = detect_running(pages, body_size=9.5)
    assert all(not result.removed[p] for p in range(1, 5))
    assert all(result.folios[p] is None for p in range(1, 5))


def test_footer_folio_and_footnote_like_bottom_line() -> None:
    footer = {1: [line("— 31 —", 280, 805, 1, 8)], 2: [line("Ghi chú: số liệu hư cấu.", 50, 805, 2, 8)]}
    pages = _pages(footer, n=2)
    result = detect_running(pages, body_size=9.5)
    assert result.folios[1] == 31 and len(result.removed[1]) == 1
    assert result.folios[2] is None and not result.removed[2]  # a small bottom line without number stays


def test_page_map_interpolates_only_between_agreeing_anchors() -> None:
    folios: dict[int, int | None] = {1: None, 2: None, 3: 103, 4: 104, 5: None, 6: 106, 7: None}
    page_map = build_page_map(folios)
    assert page_map == {1: None, 2: None, 3: 103, 4: 104, 5: 105, 6: 106, 7: None}


def test_page_map_does_not_bridge_different_offsets_and_drops_a_misread() -> None:
    folios: dict[int, int | None] = {1: 11, 2: 12, 3: None, 4: 40, 5: 41}
    assert build_page_map(folios)[3] is None  # offsets 10 and 36 disagree: no guess
    misread: dict[int, int | None] = {1: 101, 2: 102, 3: 7, 4: 104, 5: 105}
    assert build_page_map(misread)[3] == 103  # 7 disagrees with both agreeing neighbours
