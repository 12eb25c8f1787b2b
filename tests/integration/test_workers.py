"""`rag-server serve --workers 2` as a subprocess on 127.0.0.1 (FICTIONAL sample formulary): calls succeed
on both workers (each reply names its worker in the x-rag-worker trailer; the parent's metrics list both
pids), Ingest sent to the follower runs in the owner (the one ingest run counted, the owner's log lines
carry the caller's correlation id) and every worker then serves the new generation, a follow-up reaching
the other worker keeps its conversation, the metrics of both workers aggregate on the parent's one port,
and SIGTERM to the parent stops everything cleanly (every worker drained, exit 0, nothing left)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from rag_server.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    understanding_pb2,
    understanding_pb2_grpc,
)
from rag_server.role import WORKER_HEADER
from rag_server.startup import sample_pdf

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEPARATE = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own (SO_REUSEPORT spreads those)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def connection(target: str) -> Iterator[grpc.Channel]:
    channel = grpc.insecure_channel(target, options=SEPARATE)
    try:
        yield channel
    finally:
        channel.close()


def worker_of(call: Any) -> str:
    return dict(call.trailing_metadata() or ()).get(WORKER_HEADER, "")


def channel_to(target: str, worker: str, tries: int = 60) -> grpc.Channel:
    """A channel whose connection reached `worker`."""
    for _ in range(tries):
        channel = grpc.insecure_channel(target, options=SEPARATE)
        _, call = ingestion_pb2_grpc.IngestionServiceStub(channel).GetCorpus.with_call(
            ingestion_pb2.GetCorpusRequest(), timeout=10)
        if worker_of(call) == worker:
            return channel
        channel.close()
    raise AssertionError(f"no connection reached worker {worker} in {tries} tries")


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def total(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **want: str) -> float:
    return sum(v for (n, labels), v in samples.items()
               if n == name and all((k, w) in labels for k, w in want.items()))


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found |= {int(p) for p in text}
    return found


def json_lines(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_pdf(tmp_path_factory.mktemp("sample-src"))


def test_two_workers_serve_ingest_through_the_owner_and_stop_together(
    rag_server_process: Callable[..., Any], sample: Path
) -> None:
    metrics_port = free_port()
    server = rag_server_process(env={
        "RAG_WORKERS": "2", "RAG_METRICS_PORT": str(metrics_port), "RAG_INGEST_ROOTS": str(sample.parent),
        "RAG_GENERATION_WATCH_S": "0.2", "RAG_LOG_FORMAT": "json",
    })
    target = server.target

    # Calls on many connections: every one succeeds, both workers answer, correlation ids come back.
    served: Counter[str] = Counter()
    retrieves = 0
    for i in range(40):
        with connection(target) as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            reply, call = stub.Retrieve.with_call(
                retrieval_pb2.RetrieveRequest(drug_id="zelvorin", section_key="chong_chi_dinh"),
                metadata=[("x-correlation-id", f"workers-{i}")], timeout=30)
            retrieves += 1
            assert reply.evidence, reply.decision
            trailers = dict(call.trailing_metadata() or ())
            assert trailers["x-correlation-id"] == f"workers-{i}"
            served[trailers[WORKER_HEADER]] += 1
    print(f"\n40 connections answered by workers {dict(served)}")
    assert set(served) == {"0", "1"}, served

    # The parent's one metrics port: both workers' pids, every Retrieve counted once.
    time.sleep(1.5)  # the scrape-time values are mirrored every second
    samples = scrape(metrics_port)
    info = {dict(labels)["worker"]: int(dict(labels)["pid"])
            for (name, labels), _ in samples.items() if name == "rag_worker_info"}
    assert set(info) == {"0", "1"}, info
    assert set(info.values()) <= children(server.proc.pid), (info, children(server.proc.pid))
    counted = total(samples, "rag_rpc_duration_seconds_count", method="Retrieve", code="OK")
    assert counted == retrieves, (counted, retrieves)
    assert ("rag_rpc_in_flight", frozenset()) in samples

    # A follow-up reaching the other worker keeps its conversation (shared memory).
    first, second = channel_to(target, "0"), channel_to(target, "1")
    try:
        asked = list(answer_pb2_grpc.AnswerServiceStub(first).Ask(
            answer_pb2.AskRequest(query="chống chỉ định của zelvorin", conversation_id="workers-c1"),
            timeout=60))
        assert asked and asked[-1].HasField("final")
        follow = understanding_pb2_grpc.UnderstandingServiceStub(second).Understand(
            understanding_pb2.UnderstandRequest(query="còn liều dùng thì sao?", conversation_id="workers-c1"),
            timeout=30)
        assert "zelvorin" in follow.frame.drug_ids, follow

        # An upload sent to the follower lands in the owner's uploads folder (one folder, one quota).
        data = sample.read_bytes()
        parts = [ingestion_pb2.UploadDocumentRequest(
            metadata=ingestion_pb2.UploadMetadata(filename="sample.pdf", size_bytes=len(data)))]
        step = 65536
        parts += [ingestion_pb2.UploadDocumentRequest(chunk=data[i:i + step])
                  for i in range(0, len(data), step)]
        uploaded, call = ingestion_pb2_grpc.IngestionServiceStub(second).UploadDocument.with_call(
            iter(parts), timeout=60)
        assert worker_of(call) == "1"
        assert (server.data_dir / "uploads" / f"{uploaded.document_id}.pdf").read_bytes() == data

        # Ingest sent to the follower: relayed to the owner, which ingests and switches.
        before = ingestion_pb2_grpc.IngestionServiceStub(second).GetCorpus(
            ingestion_pb2.GetCorpusRequest(), timeout=10).manifest.generation
        stream = ingestion_pb2_grpc.IngestionServiceStub(second).Ingest(
            ingestion_pb2.IngestRequest(path=sample.name), metadata=[("x-correlation-id", "workers-ingest")],
            timeout=300)
        events = list(stream)
        assert stream.code() == grpc.StatusCode.OK
        summary = events[-1].summary
        assert summary.switched, summary.message
        new = summary.manifest.generation
        assert new and new != before
    finally:
        first.close()
        second.close()

    # Every worker serves the new generation soon after.
    seen: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (set(seen) == {"0", "1"} and set(seen.values()) == {new}):
        with connection(target) as channel:
            reply, call = ingestion_pb2_grpc.IngestionServiceStub(channel).GetCorpus.with_call(
                ingestion_pb2.GetCorpusRequest(), timeout=10)
            seen[worker_of(call)] = reply.manifest.generation
    print(f"after the ingest: {seen} (new generation {new})")
    assert seen == {"0": new, "1": new}, seen

    records = json_lines(server.lines)
    owner_lines = [r for r in records if r.get("process") == "worker 0"
                   and r.get("correlation_id") == "workers-ingest"]
    assert owner_lines, "the owner logged nothing under the caller's correlation id"
    time.sleep(1.5)
    samples = scrape(metrics_port)
    assert total(samples, "rag_ingest_runs_total", result="ok") == 1  # one run: in the owner
    assert total(samples, "rag_rpc_duration_seconds_count", method="Ingest") == 1  # counted once

    # SIGTERM to the parent: every worker drains, everything exits cleanly.
    pids = set(info.values())
    began = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(60)
    took = time.monotonic() - began
    print(f"SIGTERM: parent and workers exited in {took:.2f} s, exit code {code}")
    assert code == 0, server.output()
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists() and _alive(pid)], pids
    stopped = [r for r in json_lines(server.lines) if "shutting down" in str(r.get("message"))]
    assert {r.get("process") for r in stopped} == {"worker 0", "worker 1"}
    assert not [r for r in json_lines(server.lines) if r.get("level") in ("ERROR", "CRITICAL")]
    assert not (server.data_dir / "store" / "followers").exists()
    assert not (server.data_dir / "server.json").exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else ""
    return "State:\tZ" not in status
