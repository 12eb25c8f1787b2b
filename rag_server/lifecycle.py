"""Lifecycle types every layer may raise or read: the start-up refusal (one line, exit 2); the call
lifecycle of a server (calls in flight, draining at shutdown); where a running server is recorded
(server.json); how a drained server process leaves."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_server.config import Settings

STUCK_AFTER_S = 0.5  # a worker thread still running this long after the drain is stuck


class StartupError(RuntimeError):
    """The server must not start (e.g. the served corpus does not match the configured embedder, a port is
    in use, a TLS file cannot be read): the CLI prints it as one line."""


class Lifecycle:
    """Counts in-flight calls; `drain()` makes new calls (health excepted) fail with UNAVAILABLE.

    A refused call never enters: it is not in flight, so clients retrying against a draining server
    cannot hold the drain open."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.draining = False
        self.refused = 0  # calls refused with UNAVAILABLE since drain()
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> None:
        self.in_flight += 1
        self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight <= 0:
            self.in_flight = 0
            self._idle.set()

    def drain(self) -> None:
        self.draining = True

    async def wait_idle(self, timeout: float) -> bool:
        """True when no call is in flight within `timeout` seconds."""
        if self._idle.is_set():
            return True
        if timeout <= 0:
            return False
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True


def leave_now(code: int = 0, before: Callable[[], None] | None = None) -> None:
    """The server has drained: leave without grpc's shutdown (server.py: a call reaching it in its last
    instant is refused as UNAVAILABLE by the closing sockets, never CANCELLED) and without waiting for a
    worker thread still busy after the grace period (a provider call that never returns), as the README
    promises. What is buffered is written first: `before` (server.py: native stderr captured in JSON mode,
    observability/native_stderr.py), then the logs."""
    ends = time.monotonic() + STUCK_AFTER_S
    for thread in threading.enumerate():
        if thread.name.startswith("rag-work"):  # idle pool threads end as soon as the pool is shut down
            thread.join(max(0.0, ends - time.monotonic()))
    stuck = [t for t in threading.enumerate() if t.name.startswith("rag-work") and t.is_alive()]
    if stuck:
        logging.getLogger("rag_server").warning("%d worker thread(s) still busy: exiting now", len(stuck))
    if before is not None:
        before()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def write_address_file(settings: Settings, port: int) -> Path:
    """Record where this server listens, so `rag-server ingest` on the same (locked) data dir can hand
    its work to the running server instead of failing."""
    path = settings.address_file
    tmp = path.with_name(f".{path.name}.tmp")
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "[::]") else settings.host
    tmp.write_text(json.dumps({"target": f"{host}:{port}", "pid": os.getpid()}), encoding="utf-8")
    os.replace(tmp, path)
    return path
