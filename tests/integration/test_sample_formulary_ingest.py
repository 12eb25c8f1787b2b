"""The FICTIONAL sample formulary PDF -> build_chunks(), checked against the generator's gold file and the
rendered pages (table images, the page boxes of cited text)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from formulary_fixtures.sample_content import DRUGS, TableSpec
from formulary_fixtures.sample_formulary import (
    FOLIO_OFFSET,
    FRONT_PAGES,
    build_sample,
    render_sample,
    running_at,
)
from ingest.build import BuildResult, build_chunks
from ingest.segment import drug_id_for
from rag_server.domain import Chunk, ChunkKind, PageBox, TextBox, boxes_for
from rag_server.text import count_tokens
from rag_server.vocabulary import load_vocabulary

ADULT_DOSE = "Người lớn: Nhiễm khuẩn đường tiết niệu có biến chứng: 500 mg mỗi 12 giờ trong 7 - 10 ngày."
CHUNK_ID = re.compile(r"^[a-z0-9-]+__[a-z_]+__(\d+|block__t\d+(p\d+)?)$")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    pdf, gold = build_sample(tmp_path_factory.mktemp("sample") / "sample_formulary.pdf")
    return pdf, json.loads(gold.read_text("utf-8"))


@pytest.fixture(scope="module")
def built(sample: tuple[Path, dict[str, Any]]) -> BuildResult:
    return build_chunks(sample[0])


def by_section(chunks: list[Chunk]) -> dict[tuple[str, str], list[Chunk]]:
    out: dict[tuple[str, str], list[Chunk]] = {}
    for c in chunks:
        out.setdefault((c.drug_id, c.section_key), []).append(c)
    return out


def test_gold_is_fictional_and_covers_every_vocabulary_section(sample: tuple[Path, dict[str, Any]]) -> None:
    _, gold = sample
    assert gold["fictional"] is True and "NOT medical information" in gold["notice"]
    keys = {k for d in gold["drugs"] for k in d["sections"]}
    assert keys == set(load_vocabulary().keys)
    assert len(gold["drugs"]) == 8
    assert any(d["tables"] for d in gold["drugs"]) and any(d["formulas"] for d in gold["drugs"])
    pages = [{p for s in d["sections"].values() for p in s["printed_pages"]} for d in gold["drugs"]]
    assert any(len(p) > 1 for p in pages)  # a monograph spans pages


def test_every_fictional_drug_is_found_with_its_drug_id(built: BuildResult, sample: tuple[Path, dict]
                                                       ) -> None:
    _, gold = sample
    assert built.monograph_count == 8
    assert [m.drug_id for m in built.monographs] == [d["drug_id"] for d in gold["drugs"]]
    titles = {m.drug_id: m for m in built.monographs}
    assert titles["acid-pelmironic"].title == "ACID PELMIRONIC"
    assert titles["mirvetan"].drug_name == "MIRVETAN (Velanstat)"
    assert titles["mirvetan"].aliases == ["Velanstat"]


def test_every_gold_section_is_found_on_its_printed_pages(built: BuildResult, sample: tuple[Path, dict]
                                                         ) -> None:
    _, gold = sample
    sections = by_section(built.chunks)
    checked = 0
    for drug in gold["drugs"]:
        found = {m.drug_id: m for m in built.monographs}[drug["drug_id"]]
        assert found.section_keys == list(drug["sections"]), drug["drug_id"]
        for key, expected in drug["sections"].items():
            chunks = sections[(drug["drug_id"], key)]
            printed = sorted({r.printed_page for c in chunks for r in c.source_refs})
            physical = sorted({r.physical_page for c in chunks for r in c.source_refs})
            assert printed == expected["printed_pages"], (drug["drug_id"], key)
            assert physical == expected["physical_pages"], (drug["drug_id"], key)
            prose = " ".join(c.text for c in sorted(chunks, key=lambda c: c.part_index)
                             if c.chunk_kind == ChunkKind.PROSE)
            assert " ".join(prose.split()[:6]) == expected["text_snippet_first_words"], (drug["drug_id"], key)
            checked += 1
    assert checked == sum(len(d["sections"]) for d in gold["drugs"]) > 140


def test_all_gates_are_zero(built: BuildResult) -> None:
    assert built.gates_ok, [(g.name, g.count, g.examples) for g in built.failed_gates]
    assert {g.name for g in built.gates} >= {
        "chunks_without_printed_page", "unknown_section_keys", "empty_sections", "duplicate_chunk_ids",
        "chunks_over_ceiling", "monographs_without_indication", "monographs_without_sections",
        "chunks_without_source_refs", "duplicate_drug_ids", "pages_without_folio"}


def test_printed_pages_differ_from_physical_and_front_matter_has_none(built: BuildResult) -> None:
    assert built.page_map[1] is None and built.page_map[2] is None
    for physical in range(FRONT_PAGES + 1, built.pages + 1):
        assert built.page_map[physical] == physical + FOLIO_OFFSET
    # one page carries no running header at all: its folio was inferred from its neighbours
    missing = [p for p in range(1, built.pages + 1) if running_at(p, built.pages) == "none"]
    assert len(missing) == 1 and built.page_map[missing[0]] == missing[0] + FOLIO_OFFSET
    assert any(r.physical_page == missing[0] for c in built.chunks for r in c.source_refs)
    for c in built.chunks:
        assert all(r.printed_page == r.physical_page + FOLIO_OFFSET for r in c.source_refs)
        assert all(r.document_id == built.document_id for r in c.source_refs)


def test_running_headers_do_not_leak_into_text(built: BuildResult) -> None:
    for c in built.chunks:
        assert "DƯỢC THƯ MẪU" not in c.text
        assert not re.search(r"\b1[01]\d\b\s*$", c.text), c.chunk_id  # no folio stuck at a chunk end


def test_tables_become_visual_check_blocks(built: BuildResult, sample: tuple[Path, dict]) -> None:
    _, gold = sample
    blocks = [c for c in built.chunks if c.chunk_kind == ChunkKind.BLOCK]
    expected = {(d["drug_id"], t["section_key"]) for d in gold["drugs"] for t in d["tables"]}
    assert {(c.drug_id, c.section_key) for c in blocks} == expected
    sections = by_section(built.chunks)
    for block in blocks:
        assert block.requires_visual_check
        assert block.chunk_id == f"{block.drug_id}__{block.section_key}__block__{block.table_id}"
        assert "đối chiếu" in block.text
        marker = f"[Bảng: xem trang PDF {block.source_refs[0].physical_page}]"
        holders = [c for c in sections[(block.drug_id, block.section_key)] if marker in c.text]
        assert len(holders) == 1 and not holders[0].requires_visual_check  # the prose is shown
        assert marker in [holders[0].text[s:e] for s, e in holders[0].visual_spans]  # the marker is not
        assert holders[0].part_index == block.part_index
    travoxan = next(c for c in blocks if c.drug_id == "travoxan")
    assert "Clcr (ml/phút): 30 - 50; Liều uống: 250 mg mỗi 12 giờ" in travoxan.text
    zelvorin = next(c for c in blocks if c.drug_id == "zelvorin")
    assert "Viên giải phóng kéo dài" in zelvorin.text and "12 - 16" in zelvorin.text
    # the lifted cells are not also left in the prose
    prose = " ".join(c.text for c in sections[("travoxan", "lieu_luong_va_cach_dung")]
                     if c.chunk_kind == ChunkKind.PROSE)
    assert "250 mg sau mỗi lần thẩm phân" not in prose


def test_a_formula_is_a_visual_span_of_prose_that_is_not_flagged(built: BuildResult, sample: tuple[Path, dict]
                                                                  ) -> None:
    """The dosing section with a formula and a table: its prose (the adult dose) is shown, only the
    formula and the table marker are to be read on the page."""
    _, gold = sample
    [(drug, key)] = [(d["drug_id"], f["section_key"]) for d in gold["drugs"] for f in d["formulas"]]
    assert (drug, key) == ("travoxan", "lieu_luong_va_cach_dung")
    chunk = next(c for c in by_section(built.chunks)[(drug, key)] if "creatinin huyết thanh" in c.text)
    assert chunk.chunk_kind == ChunkKind.PROSE and not chunk.requires_visual_check
    visual = [chunk.text[s:e] for s, e in chunk.visual_spans]
    formula = next(v for v in visual if "creatinin huyết thanh (mg/dl)" in v)
    for part in ("Clcr (ml/phút) =", "(140 - tuổi) × cân nặng (kg)", "72 × creatinin huyết thanh (mg/dl)"):
        assert part in formula
    outside = "".join(chunk.text[a:b] for a, b in zip([0] + [e for _, e in chunk.visual_spans],
                                                       [s for s, _ in chunk.visual_spans] + [len(chunk.text)],
                                                       strict=True))
    for sentence in (ADULT_DOSE, "Ước tính độ thanh thải creatinin theo công thức Cockcroft - Gault:",
                     "Ở nữ, nhân kết quả với 0,85.", "Thời gian điều trị không quá 14 ngày."):
        assert sentence in outside
    assert "creatinin huyết thanh (mg/dl)" not in outside and "[Bảng:" not in outside
    clean = [c for c in built.chunks if c.drug_id == "zelvorin" and c.section_key == "chi_dinh"]
    assert clean and not any(c.requires_visual_check or c.visual_spans for c in clean)
    assert not any(c.requires_visual_check for c in built.chunks if c.chunk_kind == ChunkKind.PROSE)


def _table_spec(drug_id: str, key: str) -> TableSpec:
    spec = next(d for d in DRUGS if drug_id_for(d.title) == drug_id)
    items = next(items for k, items in spec.sections if k == key)
    return next(item for item in items if isinstance(item, TableSpec))


@pytest.mark.parametrize(("drug_id", "key"), [("travoxan", "lieu_luong_va_cach_dung"),
                                              ("zelvorin", "duoc_dong_hoc")])
def test_a_table_block_has_the_printed_cells_and_an_image_of_its_page(
        built: BuildResult, sample: tuple[Path, dict], drug_id: str, key: str) -> None:
    _, gold = sample
    [block] = [c for c in by_section(built.chunks)[(drug_id, key)] if c.chunk_kind == ChunkKind.BLOCK]
    assert block.table_rows == _table_spec(drug_id, key).rows
    [table] = [t for d in gold["drugs"] if d["drug_id"] == drug_id for t in d["tables"]]
    assert [r.physical_page for r in block.source_refs] == table["physical_pages"]
    [box] = block.boxes
    assert box.physical_page == table["physical_pages"][0]
    image = pymupdf.Pixmap(block.table_png)  # a PNG PyMuPDF decodes
    assert len(block.table_png) > 5_000
    scale = 150 / 72
    assert image.width == pytest.approx((box.x1 - box.x0 + 8) * scale, abs=3)
    assert image.height == pytest.approx((box.y1 - box.y0 + 8) * scale, abs=3)
    with pymupdf.open(sample[0]) as doc:  # the region holds the table's cells, and nothing else
        page = doc.load_page(box.physical_page - 1)
        words = page.get_textbox(pymupdf.Rect(box.x0, box.y0, box.x1, box.y1)).split()
    assert words == " ".join(cell for row in block.table_rows for cell in row).split()


def test_every_chunk_has_the_boxes_of_its_lines_on_its_pages(built: BuildResult, sample: tuple[Path, dict]
                                                            ) -> None:
    with pymupdf.open(sample[0]) as doc:
        sizes = {n + 1: doc.load_page(n).rect for n in range(doc.page_count)}
    for chunk in built.chunks:
        pos = 0
        assert chunk.boxes, chunk.chunk_id
        for box in chunk.boxes:
            assert box.start >= pos and not chunk.text[pos:box.start].strip(), chunk.chunk_id
            assert box.end > box.start
            rect = sizes[box.physical_page]
            assert 0 <= box.x0 < box.x1 <= rect.width and 0 <= box.y0 < box.y1 <= rect.height, chunk.chunk_id
            pos = box.end
        assert not chunk.text[pos:].strip(), chunk.chunk_id
        assert {b.physical_page for b in chunk.boxes} == {r.physical_page for r in chunk.source_refs}


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _printed_in(page: pymupdf.Page, box: PageBox | TextBox) -> str:
    """The text printed in the box (its middle band: PyMuPDF's line boxes overlap their neighbours')."""
    quarter = (box.y1 - box.y0) / 4
    return page.get_textbox(pymupdf.Rect(box.x0, box.y0 + quarter, box.x1, box.y1 - quarter))


def test_each_line_box_holds_the_text_it_gives(built: BuildResult, sample: tuple[Path, dict]) -> None:
    with pymupdf.open(sample[0]) as doc:
        for chunk in by_section(built.chunks)[("travoxan", "lieu_luong_va_cach_dung")]:
            if chunk.chunk_kind != ChunkKind.PROSE:
                continue
            for box in chunk.boxes:
                printed = _printed_in(doc.load_page(box.physical_page - 1), box)
                if not any(s <= box.start < e for s, e in chunk.visual_spans):
                    assert _words(printed) == _words(chunk.text[box.start:box.end])


@pytest.mark.parametrize("sentence", [ADULT_DOSE, "Thời gian điều trị không quá 14 ngày."])
def test_boxes_for_a_sentence_hold_its_printed_words(built: BuildResult, sample: tuple[Path, dict],
                                                      sentence: str) -> None:
    chunk = next(c for c in by_section(built.chunks)[("travoxan", "lieu_luong_va_cach_dung")]
                 if sentence in c.text)
    start = chunk.text.index(sentence)
    boxes = boxes_for(chunk, start, start + len(sentence))
    lines = [b for b in chunk.boxes if b.start < start + len(sentence) and b.end > start]
    assert len(boxes) == len(lines) >= 1
    assert all(b.printed_page == b.physical_page + FOLIO_OFFSET for b in boxes)
    with pymupdf.open(sample[0]) as doc:
        printed = " ".join(_printed_in(doc.load_page(b.physical_page - 1), b) for b in boxes)
    assert set(_words(sentence)) <= set(_words(printed))
    assert len(_words(printed)) <= len(_words(sentence)) + 12  # its lines, not the column


def test_boxes_for_a_span_across_a_page_break_are_on_both_pages(built: BuildResult) -> None:
    across = next(c for c in built.chunks if c.chunk_kind == ChunkKind.PROSE and len(c.source_refs) > 1)
    pages = [r.physical_page for r in across.source_refs]
    boxes = boxes_for(across, 0, len(across.text))
    assert sorted({b.physical_page for b in boxes}) == pages
    last_on_first = max(b.end for b in across.boxes if b.physical_page == pages[0])
    first_on_next = min(b.start for b in across.boxes if b.physical_page == pages[1])
    both = boxes_for(across, last_on_first - 3, first_on_next + 3)
    assert [b.physical_page for b in both] == pages[:2]


def test_duoc_dong_hoc_is_split_from_duoc_ly(built: BuildResult) -> None:
    sections = by_section(built.chunks)
    for drug in {m.drug_id for m in built.monographs}:
        ly = " ".join(c.text for c in sections[(drug, "duoc_ly_va_co_che_tac_dung")])
        dh = " ".join(c.text for c in sections[(drug, "duoc_dong_hoc")])
        assert "Dược động học" not in ly and dh, drug
    assert "sinh khả dụng khoảng 70%" in " ".join(c.text for c in sections[("zelvorin", "duoc_dong_hoc")])


def test_identity_sections(built: BuildResult) -> None:
    sections = by_section(built.chunks)
    assert sections[("zelvorin", "ma_atc")][0].text == "Z99CA01."
    assert sections[("novadiamin", "ten_chung_quoc_te")][0].text == "Novadiamine."  # misspelt label
    plain_label = sections[("acid-pelmironic", "loai_thuoc")][0].text
    assert plain_label.startswith("Thuốc điều trị đau nửa đầu")
    # run-in heading after the identity value on the same line
    assert sections[("novadiamin", "loai_thuoc")][0].text.endswith("(hư cấu).")
    assert sections[("novadiamin", "dang_thuoc_va_ham_luong")][0].text.startswith("Viên nén 500 mg")
    assert sections[("acid-pelmironic", "qua_lieu_va_xu_tri")]  # printed "Ouá liều và xử trí"
    assert sections[("mirvetan", "chi_dinh")][0].text.startswith("Cắt cơn hen phế quản")  # run-in "Chỉ định:"


def test_chunk_ids_unique_well_formed_and_in_order(built: BuildResult) -> None:
    ids = [c.chunk_id for c in built.chunks]
    assert len(ids) == len(set(ids))
    for c in built.chunks:
        assert CHUNK_ID.match(c.chunk_id), c.chunk_id
        if c.chunk_kind == ChunkKind.PROSE:
            assert c.chunk_id == f"{c.drug_id}__{c.section_key}__{c.part_index}"
        assert count_tokens(c.text) <= 800
        assert c.drug_name and c.section_title == load_vocabulary().title(c.section_key)
        assert c.source_refs
    for (_, _), chunks in by_section(built.chunks).items():
        parts = [c.part_index for c in chunks if c.chunk_kind == ChunkKind.PROSE]
        assert parts == list(range(len(parts)))


def test_long_section_is_split_under_the_ceiling(built: BuildResult) -> None:
    adr = [c for c in built.chunks if (c.drug_id, c.section_key) == ("keptralon", "tac_dung_khong_mong_muon")]
    assert len(adr) >= 2
    assert all(count_tokens(c.text) <= 800 for c in adr)
    assert adr[0].text.startswith("Tác dụng không mong muốn của keptralon")
    assert adr[-1].text.rstrip().endswith("sau mỗi lần tăng liều.")


def test_interaction_names_another_fictional_drug(built: BuildResult) -> None:
    text = " ".join(c.text for c in by_section(built.chunks)[("zelvorin", "tuong_tac_thuoc")])
    assert "Keptralon" in text and "60%" in text


def test_rebuild_is_identical(sample: tuple[Path, dict], built: BuildResult) -> None:
    again = build_chunks(sample[0])
    assert [(c.chunk_id, c.text) for c in again.chunks] == [(c.chunk_id, c.text) for c in built.chunks]
    assert again.document_id == built.document_id == built.pdf_sha256[:16]


def test_generation_is_deterministic(sample: tuple[Path, dict]) -> None:
    assert render_sample().pdf == sample[0].read_bytes()


def test_smaller_ceiling_and_progress(sample: tuple[Path, dict], built: BuildResult) -> None:
    events: list[tuple[str, int, int]] = []
    small = build_chunks(sample[0], max_tokens=100, progress=lambda s, d, t, m: events.append((s, d, t)))
    assert small.gates_ok, [(g.name, g.examples) for g in small.failed_gates]
    assert all(count_tokens(c.text) <= 100 for c in small.chunks)
    assert len(small.chunks) > len(built.chunks) + 15
    assert sum(1 for c in small.chunks if c.chunk_kind == ChunkKind.BLOCK) > 2  # the big table was split
    stages = [e[0] for e in events]
    assert stages.index("parse") < stages.index("segment") < stages.index("chunk") < stages.index("gates")
    assert ("parse", small.pages, small.pages) in events
