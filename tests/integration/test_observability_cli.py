"""`rag-server serve` as operators run it: JSON log lines on its output, /metrics on the configured port,
and the question of a call nowhere in what it printed."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable

import grpc
import pytest

from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.gen.rag.v1 import retrieval_pb2_grpc

pytestmark = pytest.mark.integration
LISTENING = re.compile(r"rag-server listening on (\S+):(\d+)")  # tests/conftest.py's


def test_serve_with_json_logs_and_metrics(rag_server_process: Callable[..., object]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics_port = s.getsockname()[1]
    question = "zelvorin dùng cho người lái xe ban đêm được không"
    server = rag_server_process(env={
        "RAG_LOG_FORMAT": "json", "RAG_LOG_LEVEL": "DEBUG", "RAG_METRICS_PORT": str(metrics_port),
        # the sample is loaded on start: the ingest's lines (parser, embedder) must be JSON too
    })
    with grpc.insecure_channel(server.target) as channel:  # type: ignore[attr-defined]
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        reply = stub.Retrieve(rpb.RetrieveRequest(query=question), timeout=60,
                              metadata=(("x-correlation-id", "cli-json-1"),))
    assert reply.decision.reason
    with grpc.insecure_channel(server.target) as channel:  # type: ignore[attr-defined]
        bad = channel.unary_unary("/rag.v1.RetrievalService/Retrieve")  # bytes as they are
        with pytest.raises(grpc.RpcError) as malformed:
            bad(b"\xff\xff\xff", timeout=30)
    assert malformed.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as scraped:
        text = scraped.read().decode()
    series = 'rag_rpc_duration_seconds_count{code="OK",method="Retrieve",service="rag.v1.RetrievalService"}'
    assert f"{series} 1.0" in text
    assert server.terminate() == 0  # type: ignore[attr-defined]
    lines = [line for line in server.output().splitlines() if line.strip()]  # type: ignore[attr-defined]
    records = [json.loads(line) for line in lines]  # every line on stdout and stderr is one JSON object
    assert any(r["message"].startswith("metrics on http://127.0.0.1:") for r in records)
    listening = [r for r in records if r["message"].startswith("rag-server listening on ")]
    assert len(listening) == 2 and all(r["logger"] == "rag_server.server" for r in listening)  # log + stdout
    for line in lines:  # the harness's pattern still finds the port in the JSON line
        if "listening on" in line:
            found = LISTENING.search(line)
            assert found and int(found.group(2)) == server.port  # type: ignore[attr-defined]
    assert all({"time", "level", "logger", "message", "correlation_id"} <= set(r) for r in records)
    assert question not in server.output()  # type: ignore[attr-defined]


def test_json_mode_turns_warnings_and_uncaught_exceptions_into_json_lines() -> None:
    """What libraries write through `warnings`, an exception no one caught in a thread and in the main
    thread, and what native code writes to fd 2: one JSON line each, a traceback in "exception"."""
    script = (
        "import threading, warnings\n"
        "from rag_server.config import Settings\n"
        "from rag_server.observability.logs import configure_logging, say\n"
        "configure_logging(Settings(log_format='json'))\n"
        "say('rag-server listening on 127.0.0.1:1')\n"
        "warnings.warn('a library is unhappy', DeprecationWarning, stacklevel=1)\n"
        "def boom():\n"
        "    raise ValueError('in a thread')\n"
        "t = threading.Thread(target=boom, name='worker-1'); t.start(); t.join()\n"
        "import os\n"  # native code writing to fd 2 (grpc's C core logs this way)
        "os.write(2, b'E1202 02:17:13.208979   29224 chttp2_server.cc:83] native trouble\\n')\n"
        "os.write(2, b'a bare native line\\n')\n"
        "raise RuntimeError('in the main thread')\n"
    )
    done = subprocess.run([sys.executable, "-W", "always", "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "RAG_LOG_FORMAT": "json"})
    assert done.returncode == 1
    records = [json.loads(line) for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    by_message = {r["message"].split(":")[0]: r for r in records}
    assert by_message["rag-server listening on 127.0.0.1"]["level"] == "INFO"
    warned = [r for r in records if r["logger"] == "py.warnings"]
    assert len(warned) == 1 and "a library is unhappy" in warned[0]["message"]
    thread = [r for r in records if "in thread worker-1" in r["message"]]
    assert len(thread) == 1 and "ValueError: in a thread" in thread[0]["exception"]
    main = [r for r in records if r["level"] == "CRITICAL"]
    assert len(main) == 1 and "RuntimeError: in the main thread" in main[0]["exception"]
    native = [r for r in records if r["logger"] == "grpc"]
    assert len(native) == 1 and native[0]["level"] == "ERROR"
    assert native[0]["message"] == "chttp2_server.cc:83 native trouble"
    assert [r["message"] for r in records if r["logger"] == "stderr"] == ["a bare native line"]
    assert len(records) == 6
