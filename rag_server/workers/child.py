"""One worker process of `rag-server serve --workers N`, started (spawned: a fresh interpreter, no grpc
state inherited) by supervisor.py: it serves the shared port until SIGTERM, tells its parent over `conn`
when it serves (`("ready", pid, port)`) or why it cannot start (`("failed", line, exit code)`)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from multiprocessing.connection import Connection

from rag_server.config import Settings
from rag_server.role import Role


def main(settings: Settings, role: Role, conn: Connection) -> None:
    from rag_server.extras import MissingExtra
    from rag_server.lifecycle import StartupError
    from rag_server.listen import ListenError
    from rag_server.observability.logs import configure_logging
    from rag_server.server import serve
    from rag_server.store.common import StoreError

    configure_logging(settings, process=f"worker {role.index}")

    def ready(port: int) -> None:
        conn.send(("ready", os.getpid(), port))

    try:
        asyncio.run(serve(settings, role, ready))  # leaves the process once drained (lifecycle.leave_now)
    except ListenError as exc:
        _failed(conn, f"rag-server: {exc}")
    except (StoreError, StartupError, MissingExtra) as exc:
        _failed(conn, f"rag-server: cannot start: {exc}")


def _failed(conn: Connection, line: str) -> None:
    conn.send(("failed", line, 2))  # the parent prints it (once, whichever worker failed)
    logging.shutdown()
    sys.exit(2)
