"""`rag-server ingest`: exit codes, the closing summary, one-line errors; the real pipeline on a tiny
FICTIONAL PDF."""

from __future__ import annotations

from pathlib import Path

import pytest
from fictional_chunks import write_tiny_pdf

from rag_server.cli import main
from rag_server.store.base import ChunkFilter
from rag_server.store.edge import EdgeStore

pytestmark = pytest.mark.integration


def served(data: Path) -> tuple[str | None, int]:
    store = EdgeStore(data / "store")
    try:
        manifest = store.manifest()
        return (manifest.generation if manifest else None), store.count(ChunkFilter())
    finally:
        store.close()


def test_ingest_check_resume_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    pdf = write_tiny_pdf(tmp_path / "tiny.pdf")

    assert main(["ingest", str(pdf), "--data-dir", str(data), "--check"]) == 0
    out = capsys.readouterr()
    assert "check only: all gates 0" in out.out and "ingest summary" in out.err
    assert served(data) == (None, 0)

    assert main(["ingest", str(pdf), "--data-dir", str(data)]) == 0
    out = capsys.readouterr()
    assert "serving generation" in out.out and "switched" in out.err
    generation, count = served(data)
    assert generation is not None and count == 12

    assert main(["ingest", str(pdf), "--data-dir", str(data), "--embed-only"]) == 0
    out = capsys.readouterr()
    assert "0 computed, 10 cached" in out.out  # every embedding came from the cache
    assert served(data) == (generation, count)

    bad = tmp_path / "bad.pdf"
    bad.write_text("not a pdf")
    assert main(["ingest", str(bad), "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert "not_pdf" in err and "nothing changed" in err
    assert main(["ingest", str(tmp_path / "missing.pdf"), "--data-dir", str(data)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert served(data) == (generation, count)


def test_ingest_refuses_a_data_dir_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = write_tiny_pdf(tmp_path / "tiny.pdf")
    holder = EdgeStore(tmp_path / "data" / "store")
    try:
        assert main(["ingest", str(pdf), "--data-dir", str(tmp_path / "data")]) == 1
        assert "another process" in capsys.readouterr().err
    finally:
        holder.close()
