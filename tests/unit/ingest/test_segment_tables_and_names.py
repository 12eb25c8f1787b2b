"""Segmentation of what the layout tests found: identity lines drawn as a table are read as identity lines
(a label wrapped over two rows included), a lifted dosage table stays a block with a pointer in the prose,
and a drug name from a running header left in the text never starts a monograph."""

from __future__ import annotations

from ingest.layout import PageLayout, ParsedDocument, Span, TableRegion, TextLine
from ingest.segment import Monograph, SegmentNotes, identity_rows, segment
from rag_server.vocabulary import load_vocabulary

VOCAB = load_vocabulary()


def text_line(text: str, page: int, y: float, size: float = 9.5, bold: bool = False) -> TextLine:
    bbox = (50.0, y, 50.0 + 4.6 * len(text), y + size * 1.3)
    span = Span(text, size=size, bold=bold, bbox=bbox, baseline=y + size)
    return TextLine(spans=[span], page=page, bbox=bbox)


def marker(table_id: str, page: int, y0: float, y1: float) -> TextLine:
    bbox = (50.0, y0, 280.0, y1)
    span = Span(f"[Bảng: xem trang PDF {page}]", bbox=bbox, baseline=y1)
    return TextLine(spans=[span], page=page, bbox=bbox, visual=True, table_id=table_id)


def parse(
    pages: dict[int, list[TextLine]], tables: dict[str, TableRegion], notes: SegmentNotes | None = None
) -> list[Monograph]:
    layouts = [
        PageLayout(
            page=p,
            width=595,
            height=842,
            lines=lines,
            tables={k: t for k, t in tables.items() if t.page == p},
        )
        for p, lines in pages.items()
    ]
    doc = ParsedDocument(pages=layouts, page_map={p: 100 + p for p in pages}, body_size=9.5)
    return segment(doc, VOCAB, notes)


IDENTITY = [
    ["Tên chung quốc tế", "Zelvorin."],
    ["Mã ATC", "Z99CA01."],
    ["Loại", "Thuốc chống tăng huyết áp,"],
    ["thuốc", "chẹn kênh calci (hư cấu)."],
]


def test_identity_rows_join_a_wrapped_label_and_reject_other_tables() -> None:
    assert identity_rows(IDENTITY, VOCAB) == [
        ("Tên chung quốc tế", "Zelvorin."),
        ("Mã ATC", "Z99CA01."),
        ("Loại thuốc", "Thuốc chống tăng huyết áp, chẹn kênh calci (hư cấu)."),
    ]
    assert identity_rows([["Clcr (ml/phút)", "Liều"], ["> 50", "500 mg"]], VOCAB) is None


def test_identity_lines_drawn_as_a_table_are_identity_sections_and_a_dosage_table_stays_a_block() -> None:
    tables = {
        "p1t1": TableRegion(1, (50.0, 80.0, 280.0, 130.0), IDENTITY),
        "p1t2": TableRegion(
            1,
            (50.0, 200.0, 280.0, 240.0),
            [["Clcr (ml/phút)", "Liều uống"], ["30 - 50", "250 mg mỗi 12 giờ"]],
        ),
    }
    lines = [
        text_line("ZELVORIN", 1, 60.0, size=13.0, bold=True),
        marker("p1t1", 1, 80.0, 130.0),
        text_line("Liều lượng và cách dùng", 1, 150.0, bold=True),
        text_line("Người suy thận: theo bảng sau.", 1, 165.0),
        marker("p1t2", 1, 200.0, 240.0),
        text_line("Chỉ định", 1, 260.0, bold=True),
        text_line("Tăng huyết áp.", 1, 275.0),
    ]
    [mono] = parse({1: lines}, tables)
    assert mono.drug_id == "zelvorin" and not mono.unassigned
    sections = {s.key: s for s in mono.sections}
    assert sections["ten_chung_quoc_te"].text == "Zelvorin."
    assert sections["ma_atc"].text == "Z99CA01."
    assert sections["loai_thuoc"].text == "Thuốc chống tăng huyết áp, chẹn kênh calci (hư cấu)."
    dosage = sections["lieu_luong_va_cach_dung"]
    assert [t.rows for t in dosage.tables] == [tables["p1t2"].rows]
    assert any(p.table_id == "t1" and "[Bảng" in p.text for p in dosage.pieces)  # the pointer in the prose


def test_a_drug_name_from_a_running_header_left_at_the_top_of_a_page_starts_no_monograph() -> None:
    page1 = [
        text_line("ZELVORIN", 1, 60.0, size=13.0, bold=True),
        text_line("Tên chung quốc tế: Zelvorin.", 1, 80.0),
        text_line("Mã ATC: Z99CA01.", 1, 93.0),
        text_line("Loại thuốc: Chẹn kênh calci.", 1, 106.0),
        text_line("Chỉ định", 1, 125.0, bold=True),
        text_line("Tăng huyết áp.", 1, 140.0),
    ]
    # The header of page 2 ("ZELVORIN", large and bold) was not recognised as furniture.
    page2 = [
        text_line("ZELVORIN", 2, 30.0, size=13.0, bold=True),
        text_line("Thận trọng", 2, 60.0, bold=True),
        text_line("Người suy gan.", 2, 75.0),
        text_line("Chống chỉ định", 2, 95.0, bold=True),
        text_line("Quá mẫn.", 2, 110.0),
    ]
    notes = SegmentNotes()
    [mono] = parse({1: page1, 2: page2}, {}, notes)
    assert [s.key for s in mono.sections][-3:] == ["chi_dinh", "than_trong", "chong_chi_dinh"]
    assert "ZELVORIN" not in " ".join(s.text for s in mono.sections)
    assert any("running-header name" in note for note in notes.titles[2])
    assert any("monograph title" in note for note in notes.titles[1])
    assert any("section chi_dinh" in note for note in notes.headings[1])
