"""Chunker: 800-token ceiling, paragraph/sentence boundaries, never mid-word, pages, visual spans, page boxes
and table cells kept."""

from __future__ import annotations

import re

import pytest

from ingest.chunk import assemble, chunk_section, split_ranges
from ingest.segment import LiftedTable, Monograph, Piece, Section
from rag_server.domain import ChunkKind
from rag_server.text import count_tokens
from rag_server.vocabulary import load_vocabulary

SENTENCE = "Uống {n} mg mỗi ngày, chia làm hai lần, sau bữa ăn sáng và tối, theo dõi huyết áp định kỳ."


def _paragraph(start: int, sentences: int) -> str:
    return " ".join(SENTENCE.format(n=start + i) for i in range(sentences))


def _check_boundaries(text: str, ranges: list[tuple[int, int]], max_tokens: int) -> None:
    covered = []
    for start, end in ranges:
        assert count_tokens(text[start:end]) <= max_tokens
        assert start == 0 or text[start - 1].isspace(), f"starts mid-word at {start}"
        assert end == len(text) or text[end].isspace(), f"ends mid-word at {end}"
        assert text[start:end] == text[start:end].strip()
        covered.append(text[start:end])
    # nothing dropped, nothing repeated, order kept
    assert " ".join(covered).split() == text.split()


def test_paragraphs_are_kept_whole_when_they_fit() -> None:
    paras = [_paragraph(i * 100, 14) for i in range(3)]  # ~300 tokens each
    text = "\n".join(paras)
    ranges = split_ranges(text, 800)
    _check_boundaries(text, ranges, 800)
    assert len(ranges) == 2
    first = text[ranges[0][0]:ranges[0][1]]
    assert first == "\n".join(paras[:2])  # split exactly at the paragraph boundary


def test_long_paragraph_is_split_at_sentence_ends() -> None:
    text = _paragraph(0, 80)  # one paragraph, ~1,700 tokens
    assert count_tokens(text) > 1600
    ranges = split_ranges(text, 800)
    _check_boundaries(text, ranges, 800)
    assert len(ranges) >= 3
    for start, end in ranges[:-1]:
        assert text[start:end].endswith("định kỳ.")


def test_single_overlong_sentence_is_split_on_words_as_last_resort() -> None:
    words = [f"hoạtchất{i:04d}" for i in range(900)]
    text = " ".join(words)  # one "sentence", no punctuation, > 800 tokens
    ranges = split_ranges(text, 800)
    _check_boundaries(text, ranges, 800)
    assert len(ranges) >= 2
    pieces = [w for s, e in ranges for w in text[s:e].split()]
    assert pieces == words  # no word was cut


@pytest.mark.parametrize("max_tokens", [20, 57, 200])
def test_small_ceilings_hold(max_tokens: int) -> None:
    text = "\n".join(_paragraph(i, 5) for i in range(6))
    ranges = split_ranges(text, max_tokens)
    _check_boundaries(text, ranges, max_tokens)


def test_empty_text_gives_no_ranges() -> None:
    assert split_ranges("", 800) == []
    assert split_ranges(" \n  \n", 800) == []


def test_assemble_paragraphs_and_hyphenated_line_ends() -> None:
    st = assemble([
        Piece("Tác dụng trên HIV-", 3), Piece("1 và HIV-2.", 3),
        Piece("Đoạn mới bắt đầu", 4, para_start=True), Piece("ở trang sau.", 4),
    ])
    assert st.text == "Tác dụng trên HIV-1 và HIV-2.\nĐoạn mới bắt đầu ở trang sau."
    assert [p.page for p in st.pieces_in(0, 10)] == [3]
    assert [p.page for p in st.pieces_in(0, len(st.text))] == [3, 3, 4, 4]


def _monograph(sections: list[Section]) -> Monograph:
    return Monograph(drug_id="zelvorin", title="ZELVORIN", drug_name="ZELVORIN", aliases=[], page=3,
                     sections=sections)


def test_chunk_ids_pages_and_visual_flags() -> None:
    vocab = load_vocabulary()
    long_text = [Piece(_paragraph(i * 10, 12), 5 + i // 2, para_start=True) for i in range(6)]
    section = Section("lieu_luong_va_cach_dung", "Liều lượng và cách dùng", 5, pieces=[
        *long_text,
        Piece("[Bảng: xem trang PDF 8]", 8, para_start=True, visual=True, table_id="t1"),
        Piece("Sau bảng.", 8, para_start=True),
    ], tables=[LiftedTable("t1", 8, [["Clcr (ml/phút)", "Liều"], ["> 50", "500 mg mỗi 12 giờ"]])])
    page_map = {5: 105, 6: 106, 7: 107, 8: 108}
    chunks = chunk_section(_monograph([section]), section, vocab, "doc1", page_map, 800)
    prose = [c for c in chunks if c.chunk_kind == ChunkKind.PROSE]
    blocks = [c for c in chunks if c.chunk_kind == ChunkKind.BLOCK]
    assert [c.part_index for c in prose] == list(range(len(prose)))
    assert len(prose) >= 2
    for c in prose:
        assert c.chunk_id == f"zelvorin__lieu_luong_va_cach_dung__{c.part_index}"
        assert c.section_title == "Liều lượng và cách dùng"
        assert count_tokens(c.text) <= 800
        pages = [r.physical_page for r in c.source_refs]
        assert pages == sorted(pages) and len(set(pages)) == len(pages)
        assert all(r.printed_page == r.physical_page + 100 for r in c.source_refs)
    assert prose[0].source_refs[0].physical_page == 5
    with_marker = [c for c in prose if "[Bảng: xem trang PDF 8]" in c.text]
    assert len(with_marker) == 1
    # the marker is a span to read on the page; the prose around it is not flagged
    marker = with_marker[0]
    assert not marker.requires_visual_check
    assert [marker.text[s:e] for s, e in marker.visual_spans] == ["[Bảng: xem trang PDF 8]"]
    assert not prose[0].requires_visual_check and not prose[0].visual_spans
    assert len(blocks) == 1
    block = blocks[0]
    assert block.chunk_id == "zelvorin__lieu_luong_va_cach_dung__block__t1"
    assert block.table_id == "t1" and block.requires_visual_check
    assert block.table_rows == [["Clcr (ml/phút)", "Liều"], ["> 50", "500 mg mỗi 12 giờ"]]
    assert block.part_index == with_marker[0].part_index
    assert "đối chiếu" in block.text and "Clcr (ml/phút): > 50; Liều: 500 mg mỗi 12 giờ" in block.text
    assert [(r.physical_page, r.printed_page) for r in block.source_refs] == [(8, 108)]


def test_unknown_printed_page_is_zero_not_guessed() -> None:
    vocab = load_vocabulary()
    section = Section("chi_dinh", "Chỉ định", 2, pieces=[Piece("Tăng huyết áp.", 2)])
    chunks = chunk_section(_monograph([section]), section, vocab, "doc1", {2: None}, 800)
    assert [(r.physical_page, r.printed_page) for r in chunks[0].source_refs] == [(2, 0)]


def test_oversized_table_is_split_by_rows_under_the_ceiling() -> None:
    vocab = load_vocabulary()
    rows = [["Độ thanh thải creatinin", "Liều dùng"]] + [[f"{i} - {i + 9}", f"{i * 5} mg mỗi ngày"]
                                                          for i in range(0, 400, 10)]
    section = Section("lieu_luong_va_cach_dung", "Liều", 5,
                      pieces=[Piece("[Bảng: xem trang PDF 5]", 5, True, True, "t1")],
                      tables=[LiftedTable("t1", 5, rows)])
    chunks = chunk_section(_monograph([section]), section, vocab, "d", {5: 105}, 120)
    blocks = [c for c in chunks if c.chunk_kind == ChunkKind.BLOCK]
    assert len(blocks) >= 3
    assert [c.table_id for c in blocks][:3] == ["t1", "t1p2", "t1p3"]
    lines = [line for c in blocks for line in c.text.splitlines()[1:]]  # the note opens every part
    assert lines[0] == "Độ thanh thải creatinin | Liều dùng"
    assert lines[1:] == [f"Độ thanh thải creatinin: {r[0]}; Liều dùng: {r[1]}" for r in rows[1:]]
    assert all(c.text.startswith("[Bảng trích tự động") for c in blocks)
    for c in blocks:
        assert count_tokens(c.text) <= 120
        assert re.match(r"zelvorin__lieu_luong_va_cach_dung__block__t1(p\d+)?$", c.chunk_id)
    # every part carries the header row and the cells of the rows its text reads, all rows once
    assert all(c.table_rows[0] == rows[0] for c in blocks)
    assert [row for c in blocks for row in c.table_rows[1:]] == rows[1:]
    for c in blocks:
        assert all(f"Độ thanh thải creatinin: {r[0]}; Liều dùng: {r[1]}" in c.text for r in c.table_rows[1:])


def test_a_formula_is_a_visual_span_and_the_prose_around_it_is_not_flagged() -> None:
    vocab = load_vocabulary()
    section = Section("lieu_luong_va_cach_dung", "Liều", 5, pieces=[
        Piece("Người lớn: 500 mg mỗi 12 giờ.", 5, para_start=True, bbox=(50, 100, 260, 112)),
        Piece("Clcr =", 5, para_start=True, visual=True, bbox=(50, 120, 80, 132)),
        Piece("(140 - tuổi) × cân nặng", 5, visual=True, bbox=(85, 114, 200, 126)),
        Piece("72 × creatinin", 5, visual=True, bbox=(100, 128, 180, 140)),
        Piece("Ở nữ, nhân với 0,85.", 5, para_start=True, bbox=(50, 146, 150, 158)),
    ])
    [chunk] = chunk_section(_monograph([section]), section, vocab, "d", {5: 105}, 800)
    assert not chunk.requires_visual_check
    formula = "Clcr = (140 - tuổi) × cân nặng 72 × creatinin"
    assert [chunk.text[s:e] for s, e in chunk.visual_spans] == [formula]
    start, end = chunk.visual_spans[0]
    assert chunk.text[:start] == "Người lớn: 500 mg mỗi 12 giờ.\n"
    assert chunk.text[end:] == "\nỞ nữ, nhân với 0,85."


def test_a_chunk_that_is_all_formula_is_flagged() -> None:
    vocab = load_vocabulary()
    section = Section("lieu_luong_va_cach_dung", "Liều", 5, pieces=[
        Piece("Clcr =", 5, para_start=True, visual=True, bbox=(50, 120, 80, 132)),
        Piece("(140 - tuổi) × cân nặng", 5, visual=True, bbox=(85, 114, 200, 126)),
    ])
    [chunk] = chunk_section(_monograph([section]), section, vocab, "d", {5: 105}, 800)
    assert chunk.requires_visual_check and chunk.visual_spans == [(0, len(chunk.text))]


def test_boxes_give_every_line_its_range_and_page_box_across_chunks_and_pages() -> None:
    vocab = load_vocabulary()
    pieces = []
    for i in range(60):
        page = 5 if i < 30 else 6
        y = 60.0 + 13.04 * (i % 30)
        box = (50.04, y, 280.0, y + 12)
        pieces.append(Piece(SENTENCE.format(n=i), page, para_start=i % 6 == 0, bbox=box))
    section = Section("lieu_luong_va_cach_dung", "Liều", 5, pieces=pieces)
    chunks = chunk_section(_monograph([section]), section, vocab, "d", {5: 105, 6: 106}, 300)
    assert len(chunks) >= 3
    seen = []
    for chunk in chunks:
        pos = 0
        for box in chunk.boxes:
            assert not chunk.text[pos:box.start].strip() and box.start < box.end
            pos = box.end
            seen.append((chunk.text[box.start:box.end], box.physical_page, box.x0, box.y0))
        assert not chunk.text[pos:].strip()
        assert {b.physical_page for b in chunk.boxes} == {r.physical_page for r in chunk.source_refs}
    assert [(t, page) for t, page, _, _ in seen] == [(p.text, p.page) for p in pieces]
    assert seen[1][2:] == (50.0, 73.0)  # points rounded to 0.1


def test_a_table_block_carries_its_image_and_the_table_box() -> None:
    vocab = load_vocabulary()
    section = Section("duoc_dong_hoc", "Dược động học", 9, pieces=[
        Piece("[Bảng: xem trang PDF 9]", 9, True, True, "t1", bbox=(50, 474.8, 545, 522)),
    ], tables=[LiftedTable("t1", 9, [["Dạng", "Đỉnh (giờ)"], ["Viên nén", "6 - 10"]],
                           bbox=(50, 474.8, 545, 522), png=b"\x89PNG fake")])
    prose, block = chunk_section(_monograph([section]), section, vocab, "d", {9: 109}, 800)
    assert prose.requires_visual_check  # nothing but the marker
    assert block.table_png == b"\x89PNG fake"
    assert [tuple(b) for b in block.boxes] == [(0, len(block.text), 9, 50.0, 474.8, 545.0, 522.0)]
