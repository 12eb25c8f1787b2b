"""`rag-server ingest --check` on a printing whose gates fail: per failed gate, the first pages involved and
what the parser saw there (furniture dropped and kept, title candidates, headings); the count of folios
inferred from their neighbours in the summary and through the gRPC summary. FICTIONAL sample only."""

from __future__ import annotations

from pathlib import Path

import pytest

from formulary_fixtures.alt_layouts import COVER, sample_monographs
from formulary_fixtures.alt_render import IT, RunLine, Variant, find_family, render_alt
from ingest.build import build_chunks
from ingest.pipeline import IngestOutcome
from ingest.remote import outcome_from_summary
from rag_server.api.ingestion import _summary
from rag_server.cli import main

pytestmark = pytest.mark.integration

# No folio printed anywhere: the running header holds only the drug name.
NO_FOLIO = Variant(name="no-folio", header=(RunLine("{name}", "{name}", "centre", 8.0, IT),))


@pytest.fixture(scope="module")
def unfamiliar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if find_family("serif") is None:
        pytest.skip("no TrueType family with Vietnamese glyphs (install fonts-dejavu-core)")
    pdf = tmp_path_factory.mktemp("diag") / "no-folio.pdf"
    pdf.write_bytes(render_alt(sample_monographs(), NO_FOLIO, COVER).pdf)
    return pdf


def test_failed_gates_come_with_what_the_parser_saw(unfamiliar: Path) -> None:
    result = build_chunks(unfamiliar)
    failed = {g.name for g in result.failed_gates}
    assert {"pages_without_folio", "chunks_without_printed_page"} <= failed
    assert {d.gate for d in result.diagnostics} == failed
    folio = next(d for d in result.diagnostics if d.gate == "pages_without_folio")
    assert folio.pages and all(v.printed is None for v in folio.pages)
    assert any(v.furniture_dropped for v in folio.pages)  # the drug-name header was found and dropped


def test_check_prints_the_diagnostics(
    unfamiliar: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest", str(unfamiliar), "--data-dir", str(tmp_path / "data"), "--check"]) == 1
    err = capsys.readouterr().err
    assert "why the gates failed" in err
    assert "gate pages_without_folio" in err and "gate chunks_without_printed_page" in err
    for part in (
        "furniture dropped:",
        "edge rows kept as text:",
        "title candidates:",
        "headings:",
        "first lines:",
        "(no printed page)",
    ):
        assert part in err, part
    assert "folios inferred from neighbours" in err


def test_inferred_folios_reach_the_grpc_summary() -> None:
    outcome = IngestOutcome(pdf_path="x.pdf", inferred_folios=3)
    summary = _summary(outcome)
    assert summary.inferred_folios == 3
    assert outcome_from_summary(summary).inferred_folios == 3


def test_the_sample_page_without_a_header_is_the_one_inferred_folio(tmp_path: Path) -> None:
    from formulary_fixtures.sample_formulary import FOLIO_OFFSET, render_sample, running_at

    pdf = tmp_path / "sample.pdf"
    pdf.write_bytes(render_sample().pdf)
    result = build_chunks(pdf)
    missing = [p for p in range(1, result.pages + 1) if running_at(p, result.pages) == "none"]
    assert result.inferred_pages == missing and result.inferred_folios == 1
    assert result.page_map[missing[0]] == missing[0] + FOLIO_OFFSET
