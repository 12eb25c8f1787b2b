"""Load: 200 concurrent Ask streams for RAG_RELIABILITY_SECONDS (default 60) against a real server on
127.0.0.1, from a separate client process: no error, every stream ends with its final message, and the
server's memory and asyncio task count stay bounded (sampled during the run, back to the baseline after).
Prints its figures; stops by itself. FICTIONAL sample formulary. Marked `load`: left out of the default
run (pyproject addopts), run by `bash scripts/test.sh -m load` (its own step of .ci/run)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from rag_server.config import Settings
from rag_server.server import start_server

pytestmark = [pytest.mark.reliability, pytest.mark.slow, pytest.mark.load]  # -m load (own CI step)
HERE = Path(__file__).resolve().parent
STREAMS = 200
SECONDS = float(os.environ.get("RAG_RELIABILITY_SECONDS", "60"))


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def test_two_hundred_concurrent_ask_streams(tmp_path: Path) -> None:
    settings = Settings(port=0, data_dir=tmp_path, grace_period_s=5, max_workers=8)  # type: ignore[call-arg]
    running = await start_server(settings)
    samples: list[tuple[int, float]] = []
    try:
        target = f"127.0.0.1:{running.port}"
        warm = await asyncio.create_subprocess_exec(
            sys.executable, str(HERE / "ask_load_client.py"), target, "8", "3", stdout=asyncio.subprocess.PIPE
        )
        await warm.communicate()
        base_tasks, base_rss = len(asyncio.all_tasks()), rss_mb()
        client = await asyncio.create_subprocess_exec(
            sys.executable, str(HERE / "ask_load_client.py"), target, str(STREAMS), str(SECONDS),
            stdout=asyncio.subprocess.PIPE,
        )
        waiting = asyncio.ensure_future(client.communicate())
        while not waiting.done():
            samples.append((len(asyncio.all_tasks()), rss_mb()))
            await asyncio.wait([waiting], timeout=2.0)
        out, _ = waiting.result()
        await asyncio.sleep(1.0)
        after_tasks, after_rss = len(asyncio.all_tasks()), rss_mb()
    finally:
        await running.stop(0)
    figures = json.loads(out.decode().strip().splitlines()[-1])
    peak_tasks = max(t for t, _ in samples)
    peak_rss = max(r for _, r in samples)
    print(f"\nload: {figures}; server tasks {base_tasks} -> peak {peak_tasks} -> {after_tasks}; "
          f"RSS {base_rss:.0f} -> peak {peak_rss:.0f} -> {after_rss:.0f} MB")
    assert figures["errors"] == 0, figures["first_errors"]
    assert figures["asks"] > STREAMS and figures["finals"] == figures["asks"]
    assert peak_tasks <= base_tasks + 6 * STREAMS  # a few tasks per open stream, no leak per call
    assert after_tasks <= base_tasks + 5  # everything a stream started has ended
    assert peak_rss - base_rss < 300 and after_rss - base_rss < 200  # MB: bounded, not growing per call
