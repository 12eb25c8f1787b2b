"""`rag-server serve` as operators run it: JSON log lines on its output, /metrics on the configured port,
and the question of a call nowhere in what it printed."""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Callable

import grpc
import pytest

from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.gen.rag.v1 import retrieval_pb2_grpc

pytestmark = pytest.mark.integration


def test_serve_with_json_logs_and_metrics(rag_server_process: Callable[..., object]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics_port = s.getsockname()[1]
    question = "zelvorin dùng cho người lái xe ban đêm được không"
    server = rag_server_process(env={
        "RAG_LOG_FORMAT": "json", "RAG_LOG_LEVEL": "DEBUG", "RAG_METRICS_PORT": str(metrics_port),
        "RAG_LOAD_SAMPLE_ON_START": "false",  # an empty store answers too (CORPUS_NOT_LOADED), sooner
    })
    with grpc.insecure_channel(server.target) as channel:  # type: ignore[attr-defined]
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        reply = stub.Retrieve(rpb.RetrieveRequest(query=question), timeout=60,
                              metadata=(("x-correlation-id", "cli-json-1"),))
    assert reply.decision.reason
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as scraped:
        text = scraped.read().decode()
    series = 'rag_rpc_duration_seconds_count{code="OK",method="Retrieve",service="rag.v1.RetrievalService"}'
    assert f"{series} 1.0" in text
    assert server.terminate() == 0  # type: ignore[attr-defined]
    lines = [line for line in server.output().splitlines() if line.strip()]  # type: ignore[attr-defined]
    logged = [line for line in lines if not line.startswith("rag-server listening on")]
    records = [json.loads(line) for line in logged]  # every log line is one JSON object
    assert any(r["message"].startswith("metrics on http://127.0.0.1:") for r in records)
    assert all({"time", "level", "logger", "message", "correlation_id"} <= set(r) for r in records)
    assert question not in server.output()  # type: ignore[attr-defined]
