"""Command-line failures a user meets, each said in one line: a second server on a data dir another
process owns (exit 2, no traceback)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def rag_server() -> list[str]:
    script = Path(sys.executable).parent / "rag-server"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rag_server.cli"]


def test_a_second_server_on_the_same_data_dir_says_so_in_one_line(
    rag_server_process: Callable[..., Any], tmp_path: Path
) -> None:
    first = rag_server_process(env={"RAG_LOAD_SAMPLE_ON_START": "false"}, data_dir=tmp_path / "data")
    second = subprocess.run(
        [*rag_server(), "serve", "--port", "0", "--data-dir", str(first.data_dir)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={"RAG_LOAD_SAMPLE_ON_START": "false", "PATH": "/usr/bin:/bin"},
    )
    assert second.returncode == 2, second.stderr
    assert "Traceback" not in second.stderr
    lines = [line for line in second.stderr.splitlines() if "rag-server: cannot start" in line]
    assert len(lines) == 1, second.stderr
    assert "another process" in lines[0] and "--data-dir" in lines[0]
