"""The fictional sample formulary the server loads on first start is package data (never rendered at
run time), and it is what the renderer makes today."""

from __future__ import annotations

from pathlib import Path

from rag_server.startup import SAMPLE_PDF

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_sample_is_a_fresh_render() -> None:
    from formulary_fixtures.sample_formulary import render_sample

    assert SAMPLE_PDF.is_file()
    assert SAMPLE_PDF.read_bytes() == render_sample().pdf, "run: python scripts/build_sample.py"


def test_the_runtime_never_imports_fixtures() -> None:
    # the renderers are test-only (formulary_fixtures/, not in the wheel): nothing shipped names them
    offenders = [
        str(p.relative_to(ROOT))
        for package in ("rag_server", "ingest")
        for p in (ROOT / package).rglob("*.py")
        if "formulary_fixtures" in p.read_text(encoding="utf-8") and "gen" not in p.parts
    ]
    assert offenders == []
