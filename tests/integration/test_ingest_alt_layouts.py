"""PDF ingestion on layouts our own renderer never makes: a second, independent renderer (fpdf2 + a system
TrueType face, formulary_fixtures.alt_render) draws the FICTIONAL sample (NOT medical information) and the
real monographs of ../shared/corpus (read at run time, rendered to a tmp dir only) in twelve layout variants
(formulary_fixtures.alt_layouts.VARIANTS: other fonts and sizes, headers without the book mark or with a year,
footer folios centred or at either corner, title-case titles, alias lines, numbered upper-case headings,
bold-italic headings, justified text drawn word by word, one-column and mixed pages; running headers and
footers of two or three lines in any order, tables ruled fully, by horizontal lines only (top/header/bottom,
under every row, top and bottom) or not at all, identity lines drawn as a table).

For every variant: every monograph is found, every section is found with its words, its chunks cite exactly
the printed pages the renderer put its words on, its first words are right, every section the renderer drew
a table in has the table lifted as a block, no folio had to be inferred, and all gates are 0.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from formulary_fixtures.alt_layouts import (
    RUNNING_TEXTS,
    VARIANTS,
    AltScores,
    corpus_monographs,
    gold_sections,
    render_variant,
    run_variant,
    sample_monographs,
)
from formulary_fixtures.alt_render import AltMonograph, AltTable, find_family
from ingest.build import BuildResult
from rag_server.domain import ChunkKind

NAMES = sorted(VARIANTS)


@pytest.fixture(scope="module", autouse=True)
def _fonts() -> None:
    if find_family("serif") is None:
        pytest.skip(
            "no TrueType family with Vietnamese glyphs (DejaVu, Liberation or Noto) on this machine; "
            "install fonts-dejavu-core to run the alternative-layout tests"
        )


def check(scores: AltScores, min_chunk_pages: float) -> None:
    print(f"\n{scores.summary()}")
    assert not scores.failed_gates, scores.failed_gates
    assert scores.table_sections > 0 and scores.tables_lifted == scores.table_sections, scores.unlifted_tables
    assert not scores.spurious_blocks, scores.spurious_blocks  # prose never lifted as a table
    assert scores.monographs_found == scores.monographs_expected
    assert scores.sections_total > 0
    assert scores.sections_found == scores.sections_total, scores.missing_sections[:10]
    assert scores.section_pages_ok == scores.sections_total, scores.page_mismatches[:10]
    assert scores.first_words_ok == scores.sections_total, scores.first_word_mismatches[:10]
    assert not scores.spurious_sections, scores.spurious_sections[:10]
    assert scores.chunks_pages_ok >= min_chunk_pages * scores.chunks_total, scores.page_mismatches[:10]


@pytest.fixture(scope="module")
def fictional() -> list[AltMonograph]:
    return sample_monographs()


def test_variants_differ_in_what_the_parser_could_lean_on(fictional: list[AltMonograph]) -> None:
    """The renderer really varies: fonts, page sizes, folios (offsets, 4 digits, printed = physical)."""
    rendered = {name: render_variant(fictional, name) for name in ("A", "B", "C", "F")}
    assert len({VARIANTS[n].page for n in VARIANTS}) >= 4
    assert len({r.family.files[0] for r in rendered.values()}) >= 2
    assert rendered["A"].folios[1] is None and rendered["A"].folios[2] == 98
    assert rendered["B"].folios[1] == 1
    assert rendered["C"].folios[rendered["C"].page_count] == rendered["C"].page_count + 1199
    gold = gold_sections(rendered["F"])
    assert all(g.printed_pages and g.first_words for g in gold.values())
    assert any(len(g.printed_pages) > 1 for g in gold.values())  # a section spans pages


@pytest.mark.parametrize("name", NAMES)
def test_fictional_sample_in_alt_layout(name: str, fictional: list[AltMonograph], tmp_path: Path) -> None:
    scores, result = run_variant(fictional, name, tmp_path)
    assert len(scores.monographs_expected) == 8
    check(scores, min_chunk_pages=1.0)
    assert result.inferred_folios == 0


@pytest.fixture(scope="module")
def real(corpus_dir: Path) -> list[AltMonograph]:
    return corpus_monographs(corpus_dir)


Run = tuple[AltScores, BuildResult]


@pytest.fixture(scope="module")
def real_runs(real: list[AltMonograph], tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """Each variant of the real monographs rendered and ingested once per module (PDFs in a tmp dir only)."""
    out = tmp_path_factory.mktemp("alt-real")  # corpus-derived PDFs: tmp only
    cache: dict[str, Run] = {}

    def run(name: str) -> Run:
        if name not in cache:
            cache[name] = run_variant(real, name, out)
        return cache[name]

    return run


@pytest.mark.corpus
@pytest.mark.parametrize("name", NAMES)
def test_real_corpus_in_alt_layout(name: str, real_runs: Callable[[str], Run]) -> None:
    scores, result = real_runs(name)
    assert len(scores.monographs_expected) == 12
    assert scores.sections_total >= 220
    check(scores, min_chunk_pages=0.99)
    assert result.inferred_folios == 0
    for chunk in result.chunks:  # running headers and footers never reach the text
        assert not any(text.strip() in chunk.text for text in RUNNING_TEXTS), chunk.chunk_id
    assert [m.drug_id for m in result.monographs] == scores.monographs_expected  # a header name is no title


@pytest.mark.corpus
def test_the_layout_of_the_issue_two_line_header_and_dosage_tables_ruled_by_horizontal_lines(
    real: list[AltMonograph], real_runs: Callable[[str], Run]
) -> None:
    """Variant G: a small centred book title above the line with the folio and the drug name (bold capitals),
    dosage tables with top, header and bottom rules only: every gate 0, every drug once, >= 0.99 of the
    sections whole on the right printed pages, every table section answered with a lifted block."""
    scores, result = real_runs("G")
    assert result.gates_ok, [(g.name, g.count, g.examples) for g in result.failed_gates]
    ids = [m.drug_id for m in result.monographs]
    assert ids == scores.monographs_expected and len(set(ids)) == len(ids)
    assert scores.sections_found >= 0.99 * scores.sections_total
    assert scores.section_pages_ok >= 0.99 * scores.sections_total
    assert scores.table_sections >= 3 and scores.tables_lifted == scores.table_sections
    blocks = [c for c in result.chunks if c.chunk_kind == ChunkKind.BLOCK]
    assert blocks and all(c.requires_visual_check and "__block__t" in c.chunk_id for c in blocks)
    for block in blocks:  # the prose chunk around a lifted table points to it (its marker, same part)
        where = (block.drug_id, block.section_key)
        holders = [
            c
            for c in result.chunks
            if (c.drug_id, c.section_key) == where
            and c.chunk_kind == ChunkKind.PROSE
            and c.part_index == block.part_index
        ]
        assert len(holders) == 1 and "[Bảng: xem trang PDF" in holders[0].text
    # Rows are read in order with their header (cells compared with the corpus at run time, never copied).
    drawn = next(
        item.rows
        for mono in real
        for section in mono.sections
        for item in section.items
        if isinstance(item, AltTable) and mono.drug_id == "alopurinol"
    )
    text = " ".join(c.text for c in blocks if c.drug_id == "alopurinol")
    header = [" ".join(cell.split()) for cell in drawn[0]]
    positions = [text.find(f"{header[-1]}: {' '.join(row[-1].split())}") for row in drawn[1:]]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
