"""The fictional sample formulary the server loads on first start is package data (never rendered at
run time), and it is what the renderer makes today."""

from __future__ import annotations

from pathlib import Path

from rag_server.startup import SAMPLE_PDF

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_sample_is_a_fresh_render() -> None:
    from ingest.fixtures.sample_formulary import render_sample

    assert SAMPLE_PDF.is_file()
    assert SAMPLE_PDF.read_bytes() == render_sample().pdf, "run: python scripts/build_sample.py"


def test_the_runtime_never_imports_fixtures() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "rag_server").rglob("*.py")
        if "fixtures" in p.read_text(encoding="utf-8") and "gen" not in p.parts
    ]
    assert offenders == []
