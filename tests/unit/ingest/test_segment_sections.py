"""Segmentation on hand-made lines: titles, identity lines, run-in and wrapped headings, body sub-headings."""

from __future__ import annotations

import pytest

from ingest.layout import PageLayout, ParsedDocument, Span, TextLine
from ingest.segment import Monograph, drug_id_for, segment, split_title
from rag_server.vocabulary import load_vocabulary

B, IT, R = "b", "i", "r"


class Page:
    def __init__(self) -> None:
        self.lines: list[TextLine] = []
        self.y = 60.0

    def add(self, *runs: tuple[str, str], size: float = 9.5, gap: float = 0.0) -> Page:
        self.y += gap
        spans, x = [], 50.0
        for text, style in runs:
            w = 4.6 * len(text)
            spans.append(Span(text, size=size, bold=style == B, italic=style == IT,
                              bbox=(x, self.y, x + w, self.y + size * 1.3), baseline=self.y + size))
            x += w
        self.lines.append(TextLine(spans=spans, page=3, bbox=(50.0, self.y, x, self.y + size * 1.3)))
        self.y += size * 1.36
        return self


def run(page: Page) -> list[Monograph]:
    doc = ParsedDocument(pages=[PageLayout(page=3, width=595, height=842, lines=page.lines)],
                         page_map={3: 103}, body_size=9.5)
    return segment(doc, load_vocabulary())


def texts(mono: Monograph) -> dict[str, str]:
    return {s.key: s.text for s in mono.sections}


def test_title_identity_and_run_in_heading() -> None:
    p = Page()
    p.add(("KEPTRALON", B), size=13)
    p.add(("Ten chung quốc tế:", B), (" Keptralone.", R))
    p.add(("Mã ATC", B), (": Z99AF05.", R))
    p.add(("Loai thuốc:", R), (" Chống co giật. ", R), ("Dạng thuốc và hàm lượng", B),
          (" Viên nén 200 mg.", R))
    p.add(("Chỉ định", B), gap=5)
    p.add(("Động kinh cục bộ.", R))
    [mono] = run(p)
    assert mono.drug_id == "keptralon"
    assert texts(mono) == {
        "ten_chung_quoc_te": "Keptralone.", "ma_atc": "Z99AF05.", "loai_thuoc": "Chống co giật.",
        "dang_thuoc_va_ham_luong": "Viên nén 200 mg.", "chi_dinh": "Động kinh cục bộ.",
    }


def test_unknown_bold_line_is_body_and_plain_duoc_dong_hoc_is_a_section() -> None:
    p = Page()
    p.add(("ZELVORIN", B), size=13)
    p.add(("Tên chung quốc tế:", B), (" Zelvorin.", R))
    p.add(("Dược lý và cơ chế tác dụng", B), gap=5)
    p.add(("Giãn mạch ngoại vi.", R))
    p.add(("Dược động học", R), gap=5)
    p.add(("Hấp thu chậm.", R))
    p.add(("Liều lượng và cách dùng", B), gap=5)
    p.add(("Người lớn:", B), (" 5 mg mỗi ngày.", R))
    p.add(("Thận trọng", B), (" khi dùng cho người suy gan.", R))  # bold key phrase followed by lower case
    [mono] = run(p)
    t = texts(mono)
    assert t["duoc_ly_va_co_che_tac_dung"] == "Giãn mạch ngoại vi."
    assert t["duoc_dong_hoc"] == "Hấp thu chậm."
    assert t["lieu_luong_va_cach_dung"] == "Người lớn: 5 mg mỗi ngày. Thận trọng khi dùng cho người suy gan."
    assert "than_trong" not in t


def test_heading_wrapped_over_two_lines_and_italic_tail_heading() -> None:
    p = Page()
    p.add(("TRAVOXAN", B), size=13)
    p.add(("Mã ATC:", B), (" Z99MA03.", R))
    p.add(("Dược lý và cơ chế tác dụng", B), gap=5)
    p.add(("Diệt khuẩn phụ thuộc nồng độ. ", R), ("Dược động", IT))
    p.add(("học", IT))
    p.add(("Sinh khả dụng 90%.", R))
    p.add(("Hướng dẫn cách xử trí", B), gap=5)
    p.add(("ADR", B))
    p.add(("Ngừng thuốc khi viêm gân.", R))
    [mono] = run(p)
    t = texts(mono)
    assert t["duoc_ly_va_co_che_tac_dung"] == "Diệt khuẩn phụ thuộc nồng độ."
    assert t["duoc_dong_hoc"] == "Sinh khả dụng 90%."
    assert t["huong_dan_cach_xu_tri_adr"] == "Ngừng thuốc khi viêm gân."


def test_repeated_heading_stays_body_text() -> None:
    p = Page()
    p.add(("LUMIPRAZOL", B), size=13)
    p.add(("Tên chung quốc tế:", B), (" Lumiprazole.", R))
    p.add(("Chỉ định", B), gap=5)
    p.add(("Loét dạ dày.", R))
    p.add(("Chỉ định", B), gap=5)
    p.add(("Trào ngược.", R))
    [mono] = run(p)
    assert texts(mono)["chi_dinh"] == "Loét dạ dày. Chỉ định Trào ngược."
    assert mono.ignored_headings == ["Chỉ định"]


def test_upper_case_bold_line_without_identity_is_not_a_title() -> None:
    p = Page()
    p.add(("CÁC CHUYÊN LUẬN THUỐC", B), size=18)
    p.add(("Tài liệu gồm các chuyên luận.", R))
    p.add(("LƯU Ý", B))
    p.add(("Không phải thông tin y khoa.", R))
    assert run(p) == []


def test_text_before_first_section_is_unassigned_not_lost() -> None:
    p = Page()
    p.add(("ORBIFEXIN", B), size=13)
    p.add(("Mã ATC:", B), (" Z99AX08.", R))
    [mono] = run(p)
    assert mono.unassigned == []
    q = Page()
    q.add(("ORBIFEXIN", B), size=13)
    q.add(("Thuốc mới.", R))
    q.add(("Mã ATC:", B), (" Z99AX08.", R))
    [mono2] = run(q)
    assert [piece.text for piece in mono2.unassigned] == ["Thuốc mới."]


@pytest.mark.parametrize(("title", "drug_id", "aliases"), [
    ("ACID ACETYLSALICYLIC", "acid-acetylsalicylic", []),
    ("PARACETAMOL (Acetaminophen)", "paracetamol", ["Acetaminophen"]),
    ("AMOXICILIN VÀ KALI CLAVULANAT", "amoxicilin-va-kali-clavulanat", []),
])
def test_drug_id_rule(title: str, drug_id: str, aliases: list[str]) -> None:
    assert drug_id_for(title) == drug_id
    assert split_title(title)[1] == aliases


def test_large_upper_case_chapter_heading_ends_the_monograph() -> None:
    p = Page()
    p.add(("ZELVORIN", B), size=13)
    p.add(("Mã ATC:", B), (" Z99CA01.", R))
    p.add(("Tên thương mại", B), gap=5)
    p.add(("Zelvocard.", R))
    p.add(("PHỤ LỤC 1", B), size=16, gap=20)
    p.add(("Bảng tra cứu theo mã ATC.", R))
    [mono] = run(p)
    assert texts(mono)["ten_thuong_mai"] == "Zelvocard."
    assert mono.ended_by.startswith("PHỤ LỤC 1")


def test_pieces_keep_where_they_are_printed_a_run_in_heading_leaves_its_part_of_the_line() -> None:
    p = Page()
    p.add(("KEPTRALON", B), size=13)
    p.add(("Mã ATC", B), (": Z99AF05.", R))
    p.add(("Loai thuốc:", R), (" Chống co giật. ", R), ("Dạng thuốc và hàm lượng", B),
          (" Viên nén 200 mg.", R))
    p.add(("Chỉ định", B), gap=5)
    p.add(("Động kinh cục bộ.", R))
    [mono] = run(p)
    line = p.lines[2]
    before, heading, after = line.spans[1], line.spans[2], line.spans[3]
    [value] = mono.section("loai_thuoc").pieces  # type: ignore[union-attr]
    [dosage] = mono.section("dang_thuoc_va_ham_luong").pieces  # type: ignore[union-attr]
    assert value.bbox[0] == before.bbox[0] and value.bbox[2] == before.bbox[2]  # the part before the heading
    assert dosage.bbox[0] == after.bbox[0] > heading.bbox[2] - 1  # the part after it
    [whole] = mono.section("chi_dinh").pieces  # type: ignore[union-attr]
    assert whole.bbox == p.lines[4].bbox and whole.page == 3
