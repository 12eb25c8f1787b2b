"""Real monographs (read at run time from <repo>/../shared/corpus, never copied into the repo) rendered into a
two-column formulary PDF in a tmp dir, ingested, and scored against where the renderer put the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from formulary_fixtures.real_corpus import CorpusScores, GoldMonograph, read_corpus, render_corpus, score
from formulary_fixtures.render import RenderResult
from ingest.build import BuildResult, build_chunks
from rag_server.domain import ChunkKind

pytestmark = pytest.mark.corpus

EXPECTED = ["abacavir", "acarbose", "acebutolol", "acenocoumarol", "acetazolamid", "alopurinol", "amlodipin",
            "amoxicilin", "ciprofloxacin", "metformin", "methotrexat", "paracetamol"]


@pytest.fixture(scope="module")
def corpus(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[list[GoldMonograph], RenderResult, BuildResult, CorpusScores]:
    monographs = read_corpus(corpus_dir)
    rendered = render_corpus(monographs)
    pdf = tmp_path_factory.mktemp("real-corpus") / "rendered.pdf"  # corpus-derived: tmp only
    pdf.write_bytes(rendered.pdf)
    result = build_chunks(pdf)
    scores = score(result.chunks, rendered, monographs)
    print(f"\nreal corpus: {rendered.page_count} pages, {len(result.chunks)} chunks; {scores.summary()}")
    return monographs, rendered, result, scores


def test_gold_monographs_parsed_from_markdown(corpus: tuple) -> None:
    monographs = corpus[0]
    assert [m.drug_id for m in monographs] == EXPECTED
    para = next(m for m in monographs if m.drug_id == "paracetamol")
    assert para.title == "PARACETAMOL (Acetaminophen)"
    keys = {m.drug_id: m.section_keys() for m in monographs}
    assert "huong_dan_cach_xu_tri_adr" not in keys["acebutolol"]
    assert "qua_lieu_va_xu_tri" in keys["acarbose"]  # printed "Ouá liều" in the source
    assert all("duoc_dong_hoc" in k and "chi_dinh" in k for k in keys.values())


def test_every_monograph_found(corpus: tuple) -> None:
    _, _, result, scores = corpus
    assert [m.drug_id for m in result.monographs] == EXPECTED
    assert scores.monographs_found == EXPECTED


def test_section_detection_accuracy(corpus: tuple) -> None:
    scores: CorpusScores = corpus[3]
    print(f"section accuracy {scores.section_accuracy:.3f}; missing {scores.missing_sections[:10]}; "
          f"spurious {scores.spurious_sections[:10]}")
    assert scores.sections_total >= 220
    assert scores.section_accuracy >= 0.98
    assert len(scores.spurious_sections) <= 2


def test_printed_page_accuracy(corpus: tuple) -> None:
    scores: CorpusScores = corpus[3]
    print(f"printed-page accuracy {scores.page_accuracy:.3f}; mismatches {scores.page_mismatches[:10]}")
    assert scores.chunks_total >= 200
    assert scores.page_accuracy >= 0.98


def test_gates_and_conversion_artefacts(corpus: tuple) -> None:
    _, rendered, result, _ = corpus
    assert result.gates_ok, [(g.name, g.count, g.examples) for g in result.failed_gates]
    assert all(result.page_map[p] != p for p in range(1, rendered.page_count + 1))
    for chunk in result.chunks:
        assert "DTQGVN" not in chunk.text and "<sub>" not in chunk.text and "**" not in chunk.text
    blocks = [c for c in result.chunks if c.chunk_kind == ChunkKind.BLOCK]
    assert {c.drug_id for c in blocks} >= {"acetazolamid", "alopurinol", "ciprofloxacin"}
    assert all(c.requires_visual_check for c in blocks)
