"""Background trace recording for the running server: saves never delay or fail the call that made them.

`open_recorder` opens the pool and applies migrations at start; when the database cannot be reached it
logs a warning and returns None (the server runs without traces). `TraceRecorder.record` schedules the
insert as a task; `close` drains the pending inserts (bounded by a timeout) and closes the pool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable

import asyncpg

from rag_server.persistence.migrate import apply_migrations
from rag_server.persistence.pool import create_pool
from rag_server.persistence.traces import RetrievalTrace, TraceStore

log = logging.getLogger("rag_server.persistence")

GenerationSource = Callable[[], str]


class TraceRecorder:
    """Schedules TraceStore.save in the background; at most `max_pending` inserts wait at once
    (past that a trace is dropped with a warning rather than letting memory grow while the database
    is slow)."""

    def __init__(
        self,
        traces: TraceStore,
        *,
        generation: GenerationSource | None = None,
        max_pending: int = 1000,
        drain_timeout_s: float = 10.0,
    ) -> None:
        self.traces = traces
        self.generation = generation
        self.max_pending = max_pending
        self.drain_timeout_s = drain_timeout_s
        self._pending: set[asyncio.Task[bool]] = set()
        self.dropped = 0
        self._closed = False

    @property
    def pending(self) -> int:
        return len(self._pending)

    def record(self, trace: RetrievalTrace) -> None:
        """Schedule the insert on the running loop; never raises."""
        if self._closed or len(self._pending) >= self.max_pending:
            self.dropped += 1
            log.warning("trace %s dropped (fail-open): %s", trace.correlation_id,
                        "recorder closed" if self._closed else f"{len(self._pending)} inserts pending")
            return
        task = asyncio.get_running_loop().create_task(self._save(trace), name="trace-save")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _save(self, trace: RetrievalTrace) -> bool:
        try:
            if not trace.corpus_generation and self.generation is not None:
                generation = await asyncio.to_thread(self.generation)
                trace = dataclasses.replace(trace, corpus_generation=generation)
            return await self.traces.save(trace)  # fail-open on database errors and timeouts
        except Exception:  # anything else (a bug) is logged here, never raised into the event loop
            log.exception("trace %s not saved (fail-open)", trace.correlation_id)
            return False

    async def drain(self, timeout_s: float | None = None) -> None:
        """Wait for the pending inserts; those still running after the timeout are cancelled (logged)."""
        if not self._pending:
            return
        _, still = await asyncio.wait(
            set(self._pending), timeout=self.drain_timeout_s if timeout_s is None else timeout_s
        )
        if still:
            log.warning("%d trace inserts still pending at shutdown: cancelled", len(still))
            for task in still:
                task.cancel()
            await asyncio.gather(*still, return_exceptions=True)

    async def close(self) -> None:
        """Stop accepting traces, drain the pending ones, close the pool."""
        self._closed = True
        await self.drain()
        try:
            await asyncio.wait_for(self.traces.pool.close(), self.drain_timeout_s)
        except (TimeoutError, OSError, asyncpg.InterfaceError) as exc:
            log.warning("trace pool did not close cleanly: %s", exc)
            self.traces.pool.terminate()


async def open_recorder(
    dsn: str, *, generation: GenerationSource | None = None, connect_timeout_s: float = 5.0
) -> TraceRecorder | None:
    """Pool + migrations (idempotent). None, with a warning, when the database is unusable: tracing
    must never stop the server from starting."""
    try:
        pool = await create_pool(dsn, min_size=1, max_size=4, timeout=connect_timeout_s)
    except Exception as exc:  # unreachable host, bad credentials, bad DSN ...
        log.warning("retrieval traces disabled: cannot open the database (%s: %s)", type(exc).__name__, exc)
        return None
    try:
        async with pool.acquire() as conn:
            applied = await apply_migrations(conn)
        if applied:
            log.info("applied migrations %s", ", ".join(applied))
    except Exception as exc:  # MigrationError, a failed migration, a dropped connection ...
        log.warning("retrieval traces disabled: migrations failed (%s: %s)", type(exc).__name__, exc)
        pool.terminate()
        return None
    return TraceRecorder(TraceStore(pool), generation=generation)
