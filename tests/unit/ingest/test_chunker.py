"""Chunker: 800-token ceiling, paragraph/sentence boundaries, never mid-word, pages and visual flags kept."""

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
    assert len(with_marker) == 1 and with_marker[0].requires_visual_check
    assert not prose[0].requires_visual_check
    assert len(blocks) == 1
    block = blocks[0]
    assert block.chunk_id == "zelvorin__lieu_luong_va_cach_dung__block__t1"
    assert block.table_id == "t1" and block.requires_visual_check
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
