"""One grpc.aio server hosting the four rag.v1 services, health (a status per service) and reflection.

Graceful stop (SIGTERM/SIGINT, or RunningServer.stop):
1. health turns NOT_SERVING for every service (Check answers it, Watch streams receive it and end);
2. for a short acceptance window (min(1 s, grace / 4)) everything already on its way is still served, so
   calls the server accepted just before the signal are never cut;
3. then new calls (health excepted) are refused with UNAVAILABLE while the accepted ones run to completion;
   a refused call is never in flight, so clients that keep retrying cannot hold the drain open;
4. when no accepted call is left in flight, or the grace period (RAG_GRACE_PERIOD_S) is over, the server
   stops; a call still running then is cancelled, and its work stops at its next stage.
`rag-server serve` then leaves without grpc's own shutdown once every accepted call has finished: that
shutdown answers CANCELLED to a call that reaches it in its last instant (queued in the core, or matched
while grpc.aio's serving loop ends), whereas the sockets closing with the process refuse it as
UNAVAILABLE, which a client retries. The process exits by the end of the grace period even when a worker
thread is stuck (cli.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from rag_server.api.calls import Plumbing, Registrar
from rag_server.api.health import HealthServicer
from rag_server.api.ingestion import IngestionServicer
from rag_server.api.relay import RelayIngestionServicer
from rag_server.api.services import SERVICE_NAMES, add_relay_service, add_services
from rag_server.app import App
from rag_server.config import Settings
from rag_server.lifecycle import Lifecycle, StartupError, leave_now, write_address_file
from rag_server.listen import cannot_listen, check_can_listen
from rag_server.observability import Observability
from rag_server.observability.logs import say
from rag_server.role import Role
from rag_server.security import setup as security

log = logging.getLogger("rag_server.server")



@dataclass
class RelayPort:
    """The owner worker's relay port (`serve --workers`): a unix socket in the run directory where the other
    workers hand over the Ingest and UploadDocument calls their clients sent (api/relay.py). It serves the
    owner's IngestionService through the same call plumbing (correlation id, the API-key gate: the caller's
    key travels with the call), with a lifecycle of its own that never refuses: a relayed call was accepted
    by the worker that relays it, so the owner serves it to the end while it drains (RunningServer.stop
    waits for it). Its calls are counted by the worker that received them; here only the ingest they run
    is measured (its progress and its end)."""

    server: grpc.aio.Server
    lifecycle: Lifecycle


async def open_relay_port(role: Role, ingestion: IngestionServicer, settings: Settings,
                          observability: Observability) -> RelayPort:
    max_bytes = settings.max_message_mb * 1024 * 1024
    server = grpc.aio.server(options=[
        ("grpc.max_receive_message_length", max_bytes),
        ("grpc.max_send_message_length", max_bytes),
        ("grpc.so_reuseport", 0),
    ])
    lifecycle = Lifecycle()
    plumbing = Plumbing(lifecycle, gates=security.relay_gates(settings),
                        observers=observability.relay_observers(), trailers=role.trailers)
    registrar: Any = Registrar(server, plumbing)
    add_relay_service(registrar, ingestion)
    role.relay_socket.unlink(missing_ok=True)  # left by an owner that crashed
    if not server.add_insecure_port(role.relay_target):
        raise StartupError(f"cannot listen on the relay socket {role.relay_socket}")
    await server.start()
    return RelayPort(server, lifecycle)


@dataclass
class RunningServer:
    server: grpc.aio.Server
    health: HealthServicer
    app: App
    port: int
    lifecycle: Lifecycle
    observability: Observability | None = None  # metrics endpoint and tracing of this server
    sweeper: asyncio.Task[None] | None = None  # removes old uploads (RAG_UPLOADS_MAX_AGE_S)
    relay: RelayPort | None = None  # the owner worker's port for the other workers' ingestion calls
    relayer: RelayIngestionServicer | None = None  # a follower worker's channel to that port

    async def stop(self, grace: float | None = None, *, leave: bool = False) -> bool:
        """Health NOT_SERVING first, then let accepted calls finish within the grace period; True when they
        all did. `leave`: the process exits next (cli.py), so once they all finished the grpc server is not
        shut down (see the module doc); the app is closed either way."""
        grace = self.app.settings.grace_period_s if grace is None else grace
        loop = asyncio.get_running_loop()
        ends = loop.time() + grace
        await self.health.enter_graceful_shutdown()
        await asyncio.sleep(min(self.app.settings.accept_window_s, grace / 4))
        self.lifecycle.drain()
        idle = await self.lifecycle.wait_idle(max(0.0, ends - loop.time()))
        if idle and self.relay is not None:  # calls the other workers accepted and handed over
            idle = await self.relay.lifecycle.wait_idle(max(0.0, ends - loop.time()))
        if not idle:
            in_flight = self.lifecycle.in_flight + (self.relay.lifecycle.in_flight if self.relay else 0)
            log.warning("grace period over, %d call(s) in flight: cancelling", in_flight)
        if not (idle and leave):
            await self.server.stop(max(0.0, ends - loop.time()) if idle else 0)
            if self.relay is not None:
                await self.relay.server.stop(0)
        log.info("drained: %d call(s) refused while draining", self.lifecycle.refused)
        if self.relayer is not None:
            await self.relayer.close()
        if self.sweeper is not None:
            self.sweeper.cancel()
        if self.observability is not None:
            self.observability.close()
        await self.app.close()
        return idle


async def start_server(settings: Settings, app: App | None = None, role: Role | None = None) -> RunningServer:
    """Bind the ports first (a port in use stops the start with one line, before any store opens or the
    sample is ingested: ListenError), then start the app and serve. `role`: a worker of `serve --workers`
    (rag_server/workers): the port is shared with the other workers (SO_REUSEPORT; the parent probed and
    reserved it), a follower reads the store another worker owns and relays ingestion to it."""
    tls = security.credentials(settings)  # RAG_TLS_*: read (or refused) before anything starts
    # RAG_METRICS_PORT, RAG_OTEL (MissingExtra: no extra); a worker's metrics go to the parent (multiproc.py)
    observability = Observability(settings, (role.index, role.name) if role is not None else None)
    max_bytes = settings.max_message_mb * 1024 * 1024
    lifecycle = Lifecycle()
    server = grpc.aio.server(
        interceptors=observability.interceptors or None,  # an OpenTelemetry server span per call
        options=[
            ("grpc.max_receive_message_length", max_bytes),
            ("grpc.max_send_message_length", max_bytes),
            ("grpc.so_reuseport", 1 if role is not None else 0),  # workers share the port, nobody else
        ],
    )
    if role is None:
        check_can_listen(settings.host, settings.port)  # names the cause ("address already in use")
    try:
        port = security.bind(server, settings, tls)  # TLS / mutual TLS when RAG_TLS_CERT is set
    except RuntimeError:
        port = 0
    if port == 0:
        raise cannot_listen(settings.host, settings.port, "the address cannot be bound")
    try:
        observability.serve_metrics()  # http://RAG_METRICS_HOST:RAG_METRICS_PORT/metrics (ListenError)
        app = app or App(settings, role=role)
        await app.start(observability)  # the app composes its parts and hands each to it to time
    except BaseException:
        observability.close()
        await server.stop(None)
        raise
    trailers = role.trailers if role is not None else ()
    plumbing = Plumbing(lifecycle, trailers=trailers)  # gates (auth, limits), observers (metrics) join here
    plumbing.gates.extend(security.gates_for(settings))  # API keys, rate limit, Ask stream cap
    plumbing.observers.extend(observability.observers(lifecycle))  # RPC metrics, span attributes
    registrar: Any = Registrar(server, plumbing)  # every handler wrapped once (api/calls.py)
    relay_target = role.relay_target if role is not None and not role.owner else None
    # a follower hands Ingest and UploadDocument to the owner worker (api/relay.py)
    health, ingestion = add_services(registrar, app, progress=observability.ingest_progress,
                                     relay_target=relay_target)
    relay: RelayPort | None = None
    relayer = ingestion if isinstance(ingestion, RelayIngestionServicer) else None
    sweeper: asyncio.Task[None] | None = None
    if relayer is None:
        sweeper = ingestion.uploads.start()  # old uploads removed now, then periodically
        if role is not None:  # the owner worker takes the other workers' ingestion calls
            relay = await open_relay_port(role, ingestion, settings, observability)
    await server.start()
    serving = health_pb2.HealthCheckResponse.SERVING
    for name in SERVICE_NAMES:
        await health.set(name, serving)
    await health.set("", serving)
    if role is None:
        log.info("rag-server listening on %s:%d", settings.host, port)
    else:
        log.info("worker %d of %d (%s, pid %d) serving on %s:%d", role.index, role.count, role.name,
                 os.getpid(), settings.host, port)
    if app.owns_ingestion:  # once per server, not per worker
        log.info("%s", security.describe_access(settings, port))
        security.warn_if_exposed(settings, port)  # beyond loopback with no API key: ingestion refused
    return RunningServer(server=server, health=health, app=app, port=port, lifecycle=lifecycle,
                         observability=observability, sweeper=sweeper, relay=relay, relayer=relayer)


async def serve(settings: Settings, role: Role | None = None,
                ready: Callable[[int], None] | None = None) -> None:
    """Run until SIGTERM/SIGINT, then shut down gracefully and leave the process. The one process says
    where it listens and records it (server.json); a worker tells its parent (`ready`), which does, and
    stops when that parent is gone."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before the port opens: a signal sent on "listening" counts
        loop.add_signal_handler(sig, stop.set)
    running = await start_server(settings, role=role)
    address_file: Path | None = None
    orphan: asyncio.Task[None] | None = None
    if role is None:
        say(f"rag-server listening on {settings.host}:{running.port}", logger=log.name)  # JSON in JSON mode
        address_file = write_address_file(settings, running.port)
    else:
        orphan = asyncio.create_task(_stop_when_orphaned(role.parent_pid, stop))
    if ready is not None:
        ready(running.port)
    try:
        await stop.wait()
        log.info("shutting down: health NOT_SERVING, grace %.1fs", settings.grace_period_s)
        await running.stop(leave=True)
    finally:
        if address_file is not None:
            address_file.unlink(missing_ok=True)
        if orphan is not None:
            orphan.cancel()
    # From inside the loop: asyncio.run's clean-up would cancel the calls grpc.aio has just started
    # (answered CANCELLED); leaving now closes their sockets instead (UNAVAILABLE).
    from rag_server.observability import native_stderr

    leave_now(before=native_stderr.restore)  # JSON mode: what native code wrote last is logged first


async def _stop_when_orphaned(parent_pid: int, stop: asyncio.Event, every_s: float = 1.0) -> None:
    """A worker whose parent has gone (killed) drains and stops: nothing else would ever stop it."""
    while os.getppid() == parent_pid:
        await asyncio.sleep(every_s)
    log.warning("the parent process (pid %d) is gone: stopping", parent_pid)
    stop.set()
