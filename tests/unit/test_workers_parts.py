"""Parts of `rag-server serve --workers`: how many processes serve, the port reservation, the conversation
memory the workers share, the metrics mirror of a worker and their aggregation by the parent."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rag_server.answer.shared_memory import SharedMemory
from rag_server.config import Settings
from rag_server.listen import ListenError
from rag_server.persistence.conversations import ConversationNotOwned, Turn
from rag_server.workers.supervisor import reserve_port


def test_serving_processes_default_to_one_per_core_and_a_local_qdrant_to_one() -> None:
    assert Settings(workers=3).serving_processes() == 3  # type: ignore[call-arg]
    assert Settings(workers=0).serving_processes() >= 1  # type: ignore[call-arg]
    local = Settings(workers=4, store="qdrant", qdrant_url=":memory:")  # type: ignore[call-arg]
    assert local.serving_processes() == 1
    remote = Settings(workers=4, store="qdrant", qdrant_url="http://127.0.0.1:6333")  # type: ignore[call-arg]
    assert remote.serving_processes() == 4


def test_the_reservation_holds_the_port_for_reuseport_sockets_only() -> None:
    held, port = reserve_port("127.0.0.1", 0)
    try:
        assert port > 0
        with socket.socket() as worker:  # a worker binds it too (SO_REUSEPORT) and listens
            worker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            worker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            worker.bind(("127.0.0.1", port))
        with socket.socket() as other, pytest.raises(OSError):  # anything else cannot
            other.bind(("127.0.0.1", port))
    finally:
        held.close()
    with socket.socket() as listener, pytest.raises(ListenError, match="in use"):  # a plain listener
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        reserve_port("127.0.0.1", listener.getsockname()[1])


async def test_the_shared_memory_keeps_turns_across_processes_and_their_owner(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    one, two = SharedMemory(path, turns=4), SharedMemory(path, turns=4)  # two workers' memories
    await one.append("c1", [Turn("user", "chống chỉ định của zelvorin", 0),
                            Turn("assistant", "...", 1, {"drug_ids": ["zelvorin"]})], "anonymous")
    turns = await two.recent("c1", 12, "anonymous")
    assert [t.role for t in turns] == ["user", "assistant"] and turns[1].frame == {"drug_ids": ["zelvorin"]}
    with pytest.raises(ConversationNotOwned):
        await two.recent("c1", 12, "ward-7")
    with pytest.raises(ConversationNotOwned):
        await two.append("c1", [Turn("user", "x", 2)], "ward-7")
    for i in range(5):
        await two.append("c1", [Turn("user", f"q{i}", 2 + i)], "anonymous")
    assert [t.content for t in await one.recent("c1", 12, "anonymous")] == ["q1", "q2", "q3", "q4"]
    script = (f"import asyncio; from rag_server.answer.shared_memory import SharedMemory; "
              f"m = SharedMemory({str(path)!r}); print(len(asyncio.run(m.recent('c1', 12, 'anonymous'))))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"  # another process reads the same conversation


async def test_a_new_conversation_is_claimed_once_when_two_callers_race(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite3"
    memories = [SharedMemory(path) for _ in range(4)]
    outcomes = await asyncio.gather(
        *(m.check_owner("race", f"key-{i}") for i, m in enumerate(memories)), return_exceptions=True
    )
    assert sum(o is None for o in outcomes) == 1
    assert all(isinstance(o, ConversationNotOwned) for o in outcomes if o is not None)


def test_a_workers_scrape_time_values_reach_the_parents_endpoint(tmp_path: Path) -> None:
    """Two worker processes (multiprocess mode) mirror their values; the parent's registry sums them."""
    script = """
import sys, time
from rag_server.observability.metrics import Metrics
from rag_server.observability.multiproc import Mirror
import grpc
m = Metrics(multiprocess=True)
m.watch_in_flight(lambda: 3)
m.finished("/rag.v1.RetrievalService/Retrieve", grpc.StatusCode.OK, 0.01)
mirror = Mirror(m.live, m.registry, int(sys.argv[1]), "follower")
mirror.start()
mirror.close()
"""
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": ""}
    for worker in ("0", "1"):
        subprocess.run([sys.executable, "-c", script, worker], env=env, check=True)
    from prometheus_client import generate_latest

    from rag_server.observability import multiproc

    text = generate_latest(multiproc.aggregated(tmp_path)).decode()
    retrieve = 'code="OK",method="Retrieve",service="rag.v1.RetrievalService"'
    assert f"rag_rpc_duration_seconds_count{{{retrieve}}} 2.0" in text
    assert "rag_rpc_in_flight 6.0" in text  # live sum of both workers
    assert text.count("rag_worker_info{") == 2
