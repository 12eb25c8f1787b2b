"""`rag-server ask` against a running server: streamed blocks, the decision, citations with printed
pages; a follow-up in the same conversation keeps the drug; exit 1 when nothing could be answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def _ask(target: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "rag-server"
    return subprocess.run([str(script), "ask", *args, "--target", target], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_ask_prints_blocks_decision_and_cited_pages(shared_server: Any) -> None:
    first = _ask(shared_server.target, "chống chỉ định của zelvorin", "--conversation", "cli-1")
    assert first.returncode == 0, first.stderr
    out = first.stdout
    order = [out.index(s) for s in ("[understood]", "== ZELVORIN: Chống chỉ định", "Decision: ANSWERABLE")]
    assert order == sorted(order)
    assert "zelvorin__chong_chi_dinh__0 — ZELVORIN, Chống chỉ định, trang " in out
    follow = _ask(shared_server.target, "còn liều dùng thì sao?", "--conversation", "cli-1")
    assert follow.returncode == 0 and "== ZELVORIN: Liều lượng và cách dùng" in follow.stdout


def test_ask_exits_1_when_not_answered(shared_server: Any) -> None:
    done = _ask(shared_server.target, "giá vàng hôm nay")
    assert done.returncode == 1 and "Decision: ABSTAIN (out_of_scope)" in done.stdout


def test_the_command_line_tools_send_the_key_from_the_environment(
    rag_server_process: Any, tmp_path: Path
) -> None:
    data = tmp_path / "keyed"
    script = Path(sys.executable).parent / "rag-server"
    added = subprocess.run(
        [str(script), "keys", "add", "cli-reader", "--scopes", "query", "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    key = added.stdout.strip().splitlines()[-1]
    server = rag_server_process(data_dir=data)
    refused = _ask(server.target, "chống chỉ định của zelvorin")
    assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr
    env = {**os.environ, "RAG_API_KEY": key}
    done = subprocess.run([str(script), "ask", "chống chỉ định của zelvorin", "--target", server.target],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and "Decision: ANSWERABLE" in done.stdout, done.stderr
    assert key not in done.stdout + done.stderr  # never echoed
    evaluated = subprocess.run(
        [str(script), "eval", str(REPO / "eval" / "heldout_sample_questions.jsonl"),
         "--target", server.target, "--no-warmup", "--misses", "0", "--json", str(tmp_path / "eval.json")],
        capture_output=True, text=True, timeout=300, env=env)
    assert evaluated.returncode == 0, evaluated.stdout[-2000:]
    split = next(iter(json.loads((tmp_path / "eval.json").read_text(encoding="utf-8"))["splits"].values()))
    assert split["service"]["errors"] == 0 and split["service"]["section_hit_at_1"]["value"] > 0.8
