"""The parent of `rag-server serve --workers N`: it never serves a call and never creates a grpc object.

Start: the port is probed as the one-process server does (a port in use is one line, exit 2), then
reserved with a socket bound with SO_REUSEPORT and never listening (port 0 becomes a real port every
worker then binds; nobody else can take it meanwhile), the metrics port is bound (the workers' metrics
aggregated, observability/multiproc.py), and a run directory is made (0700: the owner's relay socket, the
shared conversation memory, the metrics files). Worker 0, the owner, is started first (it opens the store
for writing and loads the sample into an empty one); once it serves, the others start together. Each is
a spawned interpreter (child.py), so no grpc state crosses a fork. When every worker serves, the parent
prints `rag-server listening on HOST:PORT` and records it in server.json.

Then it waits: a worker that exits unexpectedly is started again (after 1 s, doubling to 30 s while it
keeps failing). SIGTERM/SIGINT is passed to every worker, each drains as one server does (server.py), and
the parent exits once they all have (those still running after the grace period and 10 s are killed),
removing the run directory, the followers' copies and server.json.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType
from typing import Any

from rag_server.config import Settings
from rag_server.lifecycle import write_address_file
from rag_server.listen import ListenError, cannot_listen, check_can_listen, reason
from rag_server.observability.logs import say
from rag_server.role import Role

log = logging.getLogger("rag_server.workers")

RESTART_S = 1.0
RESTART_MAX_S = 30.0
HEALTHY_S = 60.0  # a worker serving this long has its restart delay reset
KILL_AFTER_S = 10.0  # beyond the grace period


def reserve_port(host: str, port: int) -> tuple[socket.socket, int]:
    """A socket bound to host:port with SO_REUSEPORT, never listening: it holds the port (port 0: a free
    one) for the workers, which bind it too; the kernel gives connections only to listening sockets."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise cannot_listen(host, port, reason(exc)) from None
    return sock, int(sock.getsockname()[1])


@dataclass
class Worker:
    role: Role
    process: BaseProcess
    conn: Connection
    started: float = field(default_factory=time.monotonic)
    pid: int = 0
    serving: bool = False


class Supervisor:
    def __init__(self, settings: Settings, count: int) -> None:
        self.settings = settings
        self.count = count
        self.context = multiprocessing.get_context("spawn")
        self.workers: dict[int, Worker] = {}
        self.stopping = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._delays: dict[int, float] = {}
        self._due: dict[int, float] = {}  # index -> when to start it again
        self.run_dir = Path(tempfile.mkdtemp(prefix="rag-serve-"))
        self.metrics_dir: Path | None = None
        self._endpoint: Any = None
        self.port = 0

    # --- signals ---
    def _signalled(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        with contextlib.suppress(OSError):  # the wake-up pipe is full: a wake-up is pending anyway
            self._wake_w.send(b"\0")

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_r.recv(64):
                pass
        except OSError:
            pass

    # --- start ---
    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; the exit code (0: every worker stopped cleanly)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._signalled)
        reservation: socket.socket | None = None
        address_file: Path | None = None
        try:
            try:
                check_can_listen(self.settings.host, self.settings.port)
                reservation, self.port = reserve_port(self.settings.host, self.settings.port)
                self._serve_metrics()
            except ListenError as exc:
                say(f"rag-server: {exc}", sys.stderr, logging.ERROR)
                return 2
            failed = self._start_all()
            if failed is not None:
                return failed
            if self.stopping:
                return self._stop()
            # the lines one server writes, from the same logger (what operators' tools match)
            served = logging.getLogger("rag_server.server")
            served.info("rag-server listening on %s:%d", self.settings.host, self.port)
            say(f"rag-server listening on {self.settings.host}:{self.port}", logger=served.name)
            address_file = write_address_file(self.settings, self.port)
            log.info("%d workers on %s:%d (pids %s); worker 0 (pid %d) owns ingestion", self.count,
                     self.settings.host, self.port, ", ".join(str(w.pid) for w in self.workers.values()),
                     self.workers[0].pid)
            self._watch()
            return self._stop()
        finally:
            if address_file is not None:
                address_file.unlink(missing_ok=True)
            if reservation is not None:
                reservation.close()
            if self._endpoint is not None:
                self._endpoint.close()
            shutil.rmtree(self.run_dir, ignore_errors=True)
            shutil.rmtree(self.settings.store_dir / "followers", ignore_errors=True)

    def _serve_metrics(self) -> None:
        if not self.settings.metrics_port:
            return
        from rag_server.observability import multiproc
        from rag_server.observability.endpoint import MetricsEndpoint

        self.metrics_dir = multiproc.prepare(multiproc.operator_dir() or self.run_dir / "metrics")
        os.environ.update(multiproc.worker_environment(self.metrics_dir))  # before any worker starts
        host, port = self.settings.metrics_host, self.settings.metrics_port
        try:
            self._endpoint = MetricsEndpoint(multiproc.aggregated(self.metrics_dir), host, port)
        except OSError as exc:
            raise cannot_listen(host, port, reason(exc), "serve metrics on") from None
        log.info("metrics on http://%s:%d/metrics (every worker's)", host, self._endpoint.port)

    def _spawn(self, index: int) -> Worker:
        role = Role(index=index, count=self.count, run_dir=self.run_dir, parent_pid=os.getpid())
        settings = self.settings.model_copy(update={"port": self.port})
        mine, theirs = self.context.Pipe(duplex=False)
        from rag_server.workers.child import main

        process = self.context.Process(target=main, args=(settings, role, theirs), name=f"rag-worker-{index}",
                                       daemon=False)
        process.start()
        theirs.close()
        worker = Worker(role, process, mine)
        self.workers[index] = worker
        return worker

    def _start_all(self) -> int | None:
        """The owner, then the others; an exit code when one cannot start (its line printed)."""
        for batch in ([0], list(range(1, self.count))):
            for index in batch:
                self._spawn(index)
            while not self.stopping and not all(self.workers[i].serving for i in batch):
                failed = self._step(starting=True)
                if failed is not None:
                    self._stop()
                    return failed
        return None

    # --- running ---
    def _step(self, starting: bool = False, timeout: float = 1.0) -> int | None:
        """Wait for a message, an exit or a signal; handle it. During the start, an exit code when a
        worker could not start."""
        now = time.monotonic()
        due = [i for i, t in self._due.items() if t <= now]
        for index in due:
            del self._due[index]
            if not self.stopping:
                self._spawn(index)
        waiting: list[Any] = [self._wake_r]
        for worker in self.workers.values():
            waiting += [worker.process.sentinel] + ([] if worker.serving else [worker.conn])
        if self._due:
            timeout = max(0.0, min(timeout, min(self._due.values()) - now))
        ready = wait(waiting, timeout)
        if self._wake_r in ready:
            self._drain_wakeups()
        for worker in list(self.workers.values()):
            if not worker.serving and worker.conn in ready:
                failed = self._message(worker, starting)
                if failed is not None:
                    return failed
            if worker.process.sentinel in ready:
                failed = self._exited(worker, starting)
                if failed is not None:
                    return failed
        return None

    def _message(self, worker: Worker, starting: bool) -> int | None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):  # it exited without a word: its exit is handled next
            return None
        if message[0] == "ready":
            worker.pid, worker.serving = int(message[1]), True
            log.info("worker %d (%s) serves, pid %d", worker.role.index, worker.role.name, worker.pid)
            return None
        line, code = str(message[1]), int(message[2])
        if starting:
            say(line, sys.stderr, logging.ERROR)
            return code
        log.error("worker %d could not start again: %s", worker.role.index, line)
        return None

    def _exited(self, worker: Worker, starting: bool) -> int | None:
        worker.process.join(1)
        code = worker.process.exitcode
        index = worker.role.index
        self.workers.pop(index, None)
        worker.conn.close()
        self._forget(worker)
        if self.stopping:
            return None
        if starting and not worker.serving:
            say(f"rag-server: cannot start: worker {index} exited with code {code}", sys.stderr,
                logging.ERROR)
            return 2 if code in (None, 0) else code
        healthy = time.monotonic() - worker.started > HEALTHY_S
        delay = RESTART_S if healthy else min(RESTART_MAX_S, self._delays.get(index, RESTART_S / 2) * 2)
        self._delays[index] = delay
        self._due[index] = time.monotonic() + delay
        log.error("worker %d (pid %s) exited with code %s: starting it again in %.0f s", index,
                  worker.pid or "?", code, delay)
        return None

    def _forget(self, worker: Worker) -> None:
        if self.metrics_dir is not None and worker.pid:
            from rag_server.observability.multiproc import mark_dead

            mark_dead(worker.pid, self.metrics_dir)

    def _watch(self) -> None:
        while not self.stopping:
            self._step()

    # --- stop ---
    def _stop(self) -> int:
        """SIGTERM to every worker; wait for them all (kill those still running after the grace period and
        KILL_AFTER_S); 0 when every one exited cleanly."""
        self.stopping = True
        self._due.clear()
        log.info("stopping %d worker(s)", len(self.workers))
        for worker in self.workers.values():
            if worker.process.is_alive() and worker.process.pid is not None:
                os.kill(worker.process.pid, signal.SIGTERM)
        ends = time.monotonic() + self.settings.grace_period_s + KILL_AFTER_S
        clean = True
        for worker in list(self.workers.values()):
            worker.process.join(max(0.0, ends - time.monotonic()))
            if worker.process.is_alive():
                log.error("worker %d (pid %s) still running: killing it", worker.role.index, worker.pid)
                worker.process.kill()
                worker.process.join(5)
            clean = clean and worker.process.exitcode == 0
            worker.conn.close()
            self._forget(worker)
        self.workers.clear()
        return 0 if clean else 1


def serve_workers(settings: Settings, count: int) -> int:
    return Supervisor(settings, count).run()
