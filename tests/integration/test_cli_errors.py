"""Command-line failures a user meets, each said in one line: a second server on a data dir another
process owns, a gRPC or metrics port already in use (found before anything is opened or ingested), a
provider extra that is not installed (exit 2, no traceback)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
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


@pytest.mark.parametrize(
    ("blocked", "env", "extra"),
    [
        ("cohere", {"RAG_RERANKER": "cohere", "RAG_COHERE_API_KEY": "k"}, "cohere"),
        ("boto3", {"RAG_EMBEDDER": "bedrock"}, "bedrock"),
        ("qdrant_client", {"RAG_STORE": "qdrant", "RAG_QDRANT_URL": ":memory:"}, "qdrant"),
        ("asyncpg", {"RAG_DATABASE_URL": "postgresql://127.0.0.1:1/x"}, "postgres"),
    ],
)
def test_a_provider_whose_extra_is_missing_stops_the_start_in_one_line(
    tmp_path: Path, blocked: str, env: dict[str, str], extra: str
) -> None:
    # The SDK "is not installed": a package of that name that refuses to import shadows the real one.
    shadow = tmp_path / "shadow" / blocked
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f"raise ImportError({'No module named ' + blocked!r})\n")
    done = subprocess.run(
        [*rag_server(), "serve", "--port", "0", "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(shadow.parent), "RAG_LOAD_SAMPLE_ON_START": "false",
             **env},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert f"'{extra}' extra" in lines[0] and f"formulary-rag[{extra}]" in lines[0]


def test_the_offline_defaults_need_no_extra(rag_server_process: Callable[..., Any], tmp_path: Path) -> None:
    """Every provider SDK shadowed as not installed: the embedded defaults still start and answer."""
    shadows = tmp_path / "shadow"
    for module in ("cohere", "boto3", "qdrant_client", "asyncpg"):
        (shadows / module).mkdir(parents=True)
        (shadows / module / "__init__.py").write_text(f"raise ImportError({'No module named ' + module!r})\n")
    server = rag_server_process(env={"PYTHONPATH": str(shadows), "RAG_DATABASE_URL": ""})
    done = subprocess.run(
        [*rag_server(), "eval", "--help"], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(shadows)},
    )
    assert done.returncode == 0, done.stderr  # the CLI itself loads without them too
    from formulary_rag_client import FormularyClient

    with FormularyClient(server.target) as client:
        assert client.health() == "SERVING"
        drugs = client.list_drugs()
        reply = client.retrieve(drug_id=drugs[0].drug_id, section_key="chong_chi_dinh")
        assert reply.evidence


def _serve(
    data_dir: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*rag_server(), "serve", "--data-dir", str(data_dir), *flags],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", **(env or {})},  # the sample is loaded on start by default
    )


def _nothing_written(data_dir: Path) -> bool:
    """No store, generation, address file or copied sample: the start stopped before anything opened."""
    return not data_dir.exists() or not any(data_dir.iterdir())


def test_a_grpc_port_in_use_is_one_line_before_anything_is_loaded(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        began = time.monotonic()
        done = _serve(tmp_path / "data", "--port", str(port))
        took = time.monotonic() - began
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"rag-server: cannot listen on 127.0.0.1:{port}: address already in use"]
    assert done.stdout == ""
    assert took < 30, took  # the sample (several seconds of embedding) was not ingested first
    assert _nothing_written(tmp_path / "data")


def test_a_port_another_rag_server_holds_is_one_line(
    rag_server_process: Callable[..., Any], tmp_path: Path
) -> None:
    first = rag_server_process(env={"RAG_LOAD_SAMPLE_ON_START": "false"}, data_dir=tmp_path / "first")
    done = _serve(tmp_path / "second", "--port", str(first.port))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"rag-server: cannot listen on 127.0.0.1:{first.port}: address already in use"]
    assert _nothing_written(tmp_path / "second")


def test_a_metrics_port_in_use_is_one_line_before_anything_is_loaded(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(tmp_path / "data", "--port", "0", env={"RAG_METRICS_PORT": str(port)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"rag-server: cannot serve metrics on 127.0.0.1:{port}: address already in use"]
    assert "Traceback" not in done.stdout + done.stderr and "warm-up" not in done.stderr
    assert _nothing_written(tmp_path / "data")


def test_a_port_in_use_in_json_mode_is_one_json_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(tmp_path / "data", "--port", str(port), env={"RAG_LOG_FORMAT": "json"})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    record = json.loads(lines[0])
    assert record["level"] == "ERROR"
    assert record["message"] == f"rag-server: cannot listen on 127.0.0.1:{port}: address already in use"
