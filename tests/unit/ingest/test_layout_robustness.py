"""Mechanisms added for layouts our own renderer never makes (found with formulary_fixtures.alt_render):
word gaps without space glyphs, synthetic bold, folios beside a year, running lines at a fixed height whatever
their text, numbered upper-case and wrapped headings, title-case titles, alias lines, quoted cross-references,
rules-only tables in one-column text."""

from __future__ import annotations

from typing import Any

from ingest.layout import PageLayout, ParsedDocument, Span, TextLine
from ingest.parse import chars_text
from ingest.reading_order import find_gutter, order_lines
from ingest.running import RunningRow, detect_running, folio_of
from ingest.segment import Monograph, segment
from rag_server.vocabulary import load_vocabulary

W, H = 595.0, 842.0


def char(c: str, x: float, width: float = 5.0) -> dict[str, Any]:
    return {"c": c, "origin": (x, 100.0), "bbox": (x, 90.0, x + width, 102.0)}


def word_chars(*words: tuple[str, float]) -> list[dict[str, Any]]:
    out = []
    for text, x in words:
        for i, c in enumerate(text):
            out.append(char(c, x + 5.0 * i))
    return out


def test_word_gap_without_a_space_glyph_becomes_a_space() -> None:
    # "Chỉ" ends at x=65; "định" starts 3 pt later (a space at 10 pt is ~2.9 pt; kerning is < 1 pt).
    assert chars_text(word_chars(("Chỉ", 50.0), ("định", 68.0)), 10.0) == "Chỉ định"
    assert chars_text(word_chars(("Chỉ", 50.0), ("định", 65.5)), 10.0) == "Chỉđịnh"  # tight: one word
    spaced = [*word_chars(("Chỉ", 50.0)), char(" ", 65.0, 3.0), *word_chars(("định", 68.0))]
    assert chars_text(spaced, 10.0) == "Chỉ định"  # an existing space is not doubled


def line(text: str, x0: float, y0: float, page: int = 1, size: float = 9.5, width: float | None = None,
         bold: bool = False, italic: bool = False) -> TextLine:
    x1 = x0 + (width if width is not None else 4.8 * len(text))
    bbox = (x0, y0, x1, y0 + size * 1.3)
    return TextLine(spans=[Span(text, size=size, bold=bold, italic=italic, bbox=bbox, baseline=y0 + size)],
                    page=page, bbox=bbox)


def body(page: int, first_y: float = 70.0, n: int = 40) -> list[TextLine]:
    return [line("Thuốc được hấp thu nhanh qua đường tiêu hóa và thải trừ qua thận ở người lớn.", 50,
                 first_y + 13 * i, page, width=495) for i in range(n)]


def test_a_year_in_every_header_is_not_the_folio() -> None:
    pages = []
    for p in range(1, 9):
        header = [line("PARACETAMOL", 50, 30, p, 8, bold=True), line("DTQG 2018", 480, 30, p, 8)]
        footer = [line(f"- {300 + p} -", 280, 800, p, 8)]
        pages.append((p, W, H, header + body(p) + footer))
    result = detect_running(pages, body_size=9.5)
    assert result.folios == {p: 300 + p for p in range(1, 9)}
    row = RunningRow(1, "top", [line("Dược thư quốc gia Việt Nam — 2018", 300, 30, size=8, width=245),
                                line("124", 50, 30, size=8)], 20.0, W)
    assert folio_of(row) == 124  # a bare number before one inside words, even at the same edge distance
    assert folio_of(RunningRow(1, "bottom", [line("Trang 12/350", 480, 800, size=8)], 20.0, W)) == 12


def test_header_at_body_size_with_changing_text_is_found_by_its_fixed_height() -> None:
    names = ["Abacavir", "Abacavir", "Acarbose", "Acebutolol", "Acebutolol", "Alopurinol"]
    pages = [(p, W, H, [line(names[p - 1], 50, 30, p, 9.5, italic=True), *body(p),
                        line(str(40 + p), 530, 800, p, 9.5)]) for p in range(1, 7)]
    result = detect_running(pages, body_size=9.5)
    for p, _w, _h, lines in pages:
        assert {lines[i].text for i in result.removed[p]} == {names[p - 1], str(40 + p)}
    assert result.folios == {p: 40 + p for p in range(1, 7)}
    # Without headers, the first body line of each page (same height everywhere, not set apart) stays.
    plain = [(p, W, H, [*body(p), line(str(40 + p), 530, 800, p, 9.5)]) for p in range(1, 7)]
    result = detect_running(plain, body_size=9.5)
    assert all(len(result.removed[p]) == 1 for p in range(1, 7))


def test_rules_only_table_in_one_column_text_does_not_make_two_columns() -> None:
    lines = [line(f"Dòng văn bản {i} chạy hết chiều rộng trang, không có cột.", 50, 60 + 13 * i, width=495)
             for i in range(8)]
    for r in range(5):  # a four-column table without vertical rules: cells at four x positions
        y = 170 + 13 * r
        lines += [line("Viên nén", 50, y, width=40), line("Thời gian đạt đỉnh 1 - 4", 140, y, width=85),
                  line("8 - 12", 330, y, width=30), line("Chưa biết", 430, y, width=45)]
    lines += [line("Chỉ định", 50, 250, bold=True, width=40), line("Ngắn.", 50, 263, width=30)]
    lines += [line(f"Dòng cuối {i} chạy hết chiều rộng trang, không có cột.", 50, 280 + 13 * i, width=495)
              for i in range(6)]
    assert find_gutter(lines, W) is None
    ordered, columns = order_lines(lines, W)
    assert columns == 1
    texts = [ln.text for ln in ordered]
    assert texts.index("Chỉ định") > max(i for i, t in enumerate(texts) if "Chưa biết" in t)


# --- segmentation ---------------------------------------------------------------------------------------


class Page:
    def __init__(self) -> None:
        self.lines: list[TextLine] = []
        self.y = 60.0

    def add(self, text: str, bold: bool = False, italic: bool = False, size: float = 9.5,
            gap: float = 0.0) -> Page:
        self.y += gap
        self.lines.append(line(text, 50, self.y, 3, size, bold=bold, italic=italic))
        self.y += size * 1.36
        return self


def run(page: Page) -> list[Monograph]:
    doc = ParsedDocument(pages=[PageLayout(page=3, width=W, height=H, lines=page.lines)],
                         page_map={3: 103}, body_size=9.5)
    return segment(doc, load_vocabulary())


def identity(p: Page) -> Page:
    return p.add("Tên chung quốc tế: Zelvorin.").add("Mã ATC: Z99CA01.").add("Loại thuốc: Chẹn kênh calci.")


def test_title_case_title_with_alias_line_and_numbered_upper_case_headings() -> None:
    p = Page().add("Zelvorin", bold=True, size=13).add("(Zelvocard)", italic=True)
    identity(p).add("1. CHỈ ĐỊNH", bold=True, gap=6).add("Tăng huyết áp.")
    p.add("2. TÁC DỤNG KHÔNG MONG MUỐN", bold=True, gap=6).add("(ADR)", bold=True).add("Phù cổ chân.")
    [mono] = run(p)
    assert (mono.drug_id, mono.title, mono.aliases) == ("zelvorin", "Zelvorin (Zelvocard)", ["Zelvocard"])
    assert [s.key for s in mono.sections][-2:] == ["chi_dinh", "tac_dung_khong_mong_muon"]
    assert mono.section("chi_dinh").text == "Tăng huyết áp."  # type: ignore[union-attr]
    assert mono.section("tac_dung_khong_mong_muon").text == "Phù cổ chân."  # type: ignore[union-attr]
    assert not mono.unassigned


def test_bold_body_size_mixed_case_line_without_identity_lines_is_not_a_title() -> None:
    p = Page().add("ZELVORIN", bold=True, size=13)
    identity(p).add("Liều lượng và cách dùng", bold=True, gap=6).add("Người lớn", bold=True)
    p.add("Uống 5 mg mỗi ngày.")
    [mono] = run(p)
    assert mono.section("lieu_luong_va_cach_dung").text == "Người lớn Uống 5 mg mỗi ngày."  # type: ignore


def test_quoted_cross_reference_on_its_own_line_is_not_a_heading() -> None:
    p = Page().add("ZELVORIN", bold=True, size=13)
    identity(p).add("Hướng dẫn cách xử trí ADR", bold=True, gap=6)
    p.add("Ngừng thuốc. Về điều trị, xin đọc phần:").add('"Quá liều và xử trí".')
    p.add("Quá liều và xử trí", bold=True, gap=6).add("Rửa dạ dày.")
    [mono] = run(p)
    assert mono.section("huong_dan_cach_xu_tri_adr").text.endswith('"Quá liều và xử trí".')  # type: ignore
    assert mono.section("qua_lieu_va_xu_tri").text == "Rửa dạ dày."  # type: ignore[union-attr]
