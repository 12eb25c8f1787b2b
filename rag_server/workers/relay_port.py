"""The owner worker's relay port (`serve --workers`): a unix socket in the run directory where the other
workers hand over the Ingest and UploadDocument calls their clients sent (api/relay.py). It serves the
owner's IngestionService through the same call plumbing (correlation id, the API-key gate: the caller's
key travels with the call), with a lifecycle of its own that never refuses: a relayed call was accepted
by the worker that relays it, so the owner serves it to the end while it drains (RunningServer.stop
waits for it). Its calls are counted by the worker that received them; here only the ingest they run is
measured (its progress and its end)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

from rag_server.api.calls import Lifecycle, Plumbing, Registrar
from rag_server.api.ingestion import IngestionServicer
from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2_grpc
from rag_server.lifecycle import StartupError
from rag_server.observability import Observability
from rag_server.security import setup as security
from rag_server.workers.role import Role


@dataclass
class RelayPort:
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
    ingestion_pb2_grpc.add_IngestionServiceServicer_to_server(ingestion, registrar)
    role.relay_socket.unlink(missing_ok=True)  # left by an owner that crashed
    if not server.add_insecure_port(role.relay_target):
        raise StartupError(f"cannot listen on the relay socket {role.relay_socket}")
    await server.start()
    return RelayPort(server, lifecycle)
