"""PDF ingestion on layouts our own renderer never makes: a second, independent renderer (fpdf2 + a system
TrueType face, ingest.fixtures.alt_render) draws the FICTIONAL sample (NOT medical information) and the real
monographs of ../shared/corpus (read at run time, rendered to a tmp dir only) in six layout variants
(ingest.fixtures.alt_layouts.VARIANTS: other fonts and sizes, headers without the book mark or with a year,
footer folios centred or at the outer edge, title-case titles, alias lines, numbered upper-case headings,
bold-italic headings, justified text drawn word by word, one-column and mixed pages, rules-only tables).

For every variant: every monograph is found, every section is found with its words, its chunks cite exactly
the printed pages the renderer put its words on, its first words are right, and all gates are 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.fixtures.alt_layouts import (
    RUNNING_TEXTS,
    VARIANTS,
    AltScores,
    corpus_monographs,
    gold_sections,
    render_variant,
    run_variant,
    sample_monographs,
)
from ingest.fixtures.alt_render import AltMonograph, find_family

NAMES = sorted(VARIANTS)


@pytest.fixture(scope="module", autouse=True)
def _fonts() -> None:
    if find_family("serif") is None:
        pytest.skip("no TrueType family with Vietnamese glyphs (DejaVu, Liberation or Noto) on this machine; "
                    "install fonts-dejavu-core to run the alternative-layout tests")


def check(scores: AltScores, min_chunk_pages: float) -> None:
    print(f"\n{scores.summary()}")
    assert not scores.failed_gates, scores.failed_gates
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
    scores, _ = run_variant(fictional, name, tmp_path)
    assert len(scores.monographs_expected) == 8
    check(scores, min_chunk_pages=1.0)


@pytest.fixture(scope="module")
def real(corpus_dir: Path) -> list[AltMonograph]:
    return corpus_monographs(corpus_dir)


@pytest.mark.corpus
@pytest.mark.parametrize("name", NAMES)
def test_real_corpus_in_alt_layout(name: str, real: list[AltMonograph],
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp(f"alt-{name}")  # corpus-derived PDF: tmp only
    scores, result = run_variant(real, name, out)
    assert len(scores.monographs_expected) == 12
    assert scores.sections_total >= 220
    # A rules-only table (variant F) is read row by row, not lifted: its chunk's words cannot all be located.
    check(scores, min_chunk_pages=0.99)
    for chunk in result.chunks:  # running headers and footers never reach the text
        assert not any(text.strip() in chunk.text for text in RUNNING_TEXTS), chunk.chunk_id
