"""Where the audit chain is kept, and the background writer that appends to it without slowing a call.

* `FileAuditStore`: `<data-dir>/audit/audit.jsonl`, one record per line (its canonical JSON plus "hash"),
  and `<data-dir>/audit/head.json` (the latest seq and hash). An append holds an exclusive fcntl lock on the
  JSONL file while it reads the last record and the head, writes its lines (fsynced) and then the head, so
  several processes on one data dir keep one chain; `audit verify` reads under a shared lock.
* `PostgresAuditStore`: tables `audit_records` and `audit_head` (migration 0005). An append is one
  transaction: lock the head row (SELECT ... FOR UPDATE: appends of every server are serialised), insert the
  records, move the head. The pool opens on the first append (and again after a failure); the migrations
  are applied then, so an unreachable database at start delays records rather than losing the setting.
* `AuditWriter`: `record(entry)` puts the entry on a bounded queue and returns; one task per process
  appends queued entries in batches, in order (the chain's order is the order of `record` calls). A batch
  that cannot be written is retried a few times; an entry that still cannot be written, or finds the queue
  full or the writer closed, is logged at ERROR (its rpc and correlation id) and counted in `failures`
  (exported as rag_audit_write_failures_total). `close` drains the queue (bounded by a timeout).
"""

from __future__ import annotations

import asyncio
import contextvars
import fcntl
import json
import logging
import os
from collections import deque
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rag_server.persistence.audit import (
    GENESIS,
    Entry,
    Head,
    ProviderVersions,
    QuestionMode,
    Stored,
    Verdict,
    canonical,
    link,
    walk,
)

if TYPE_CHECKING:
    import asyncpg

    from rag_server.config import Settings

log = logging.getLogger("rag_server.audit")


class AuditFailure(StrEnum):
    """Why an audit record was not written (each logged at ERROR, counted by reason)."""

    QUEUE_FULL = "queue_full"
    CLOSED = "closed"
    WRITE_ERROR = "write_error"
    BUILD_ERROR = "build_error"
    SHUTDOWN = "shutdown"


_TAIL_BLOCK = 64 * 1024


class AuditStore(Protocol):
    where: str

    async def append(self, entries: Sequence[Entry]) -> int:
        """Append `entries` as the next records, in order; the last seq written. All or nothing."""

    async def verify(self) -> Verdict: ...

    async def last(self, count: int) -> list[str]:
        """The bodies of the last `count` records, oldest first."""

    async def close(self) -> None: ...


# --- the file -------------------------------------------------------------------------------------------
class FileAuditStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / "audit.jsonl"
        self.head_path = directory / "head.json"
        self.where = str(self.path)

    async def append(self, entries: Sequence[Entry]) -> int:
        return await asyncio.to_thread(self.append_now, entries)

    def append_now(self, entries: Sequence[Entry]) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            seq, prev = self._continue_from(fd)
            lines: list[str] = []
            for entry in entries:
                seq += 1
                body, prev = link(prev, seq, entry)
                lines.append(f'{body[:-1]},"hash":"{prev}"}}\n')  # the body with its hash, one line
            data = "".join(lines).encode("utf-8")
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
            try:
                self._write_head(Head(seq, prev))
            except OSError as exc:  # the records are written: never retried (that would duplicate them)
                log.error("audit head %s not updated (audit verify warns until the next append): %s",
                          self.head_path, exc)
            return seq
        finally:
            os.close(fd)  # releases the lock

    def _continue_from(self, fd: int) -> tuple[int, str]:
        """(seq, hash) to chain after: the head, unless it is behind the last line of the file (a writer
        stopped between its lines and its head). Following the head rather than a last line that was removed
        or rewritten keeps the evidence: `audit verify` still sees the gap or the changed record."""
        head = self._read_head()
        tail = self._last_line(fd)
        seq, prev = (0, GENESIS)
        if tail is not None:
            try:
                record = json.loads(tail)
                seq, prev = int(record["seq"]), str(record["hash"])
            except (ValueError, KeyError, TypeError):
                if head is None:
                    raise ValueError(f"the last line of {self.path} is not an audit record and there is no "
                                     "head to continue from") from None
                log.error("the last line of audit file %s is not a record: continuing after the head",
                          self.path)
                return head.seq, head.hash
        if head is not None and head.seq > seq:
            log.error("audit file %s ends at seq %d but its head is at seq %d: records were removed; the "
                      "chain continues after the head (audit verify reports the gap)", self.path, seq,
                      head.seq)
        elif head is not None and head.seq == seq and head.hash != prev:
            log.error("the last record of audit file %s is not the one its head names: continuing after the "
                      "head (audit verify reports the change)", self.path)
        if head is not None and head.seq >= seq:
            return head.seq, head.hash
        return seq, prev

    def _last_line(self, fd: int) -> str | None:
        """The last complete line. A torn last line (a crash mid-write) is moved to audit.jsonl.torn (or
        completed with its newline when it is a whole record) so the next records follow a whole one."""
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        block = min(size, _TAIL_BLOCK)
        while True:
            data = os.pread(fd, block, size - block)
            if not data.endswith(b"\n"):
                return self._mend_torn_tail(fd, size, data)
            cut = data.rfind(b"\n", 0, len(data) - 1)
            if cut >= 0 or block == size:
                return data[cut + 1 : -1].decode("utf-8")
            block = min(size, block * 2)

    def _mend_torn_tail(self, fd: int, size: int, data: bytes) -> str | None:
        cut = data.rfind(b"\n")
        if cut < 0 and len(data) < size:
            data = os.pread(fd, size, 0)
            cut = data.rfind(b"\n")
        torn = data[cut + 1 :]
        try:
            record = json.loads(torn)
            whole = isinstance(record, dict) and "hash" in record and "seq" in record
        except ValueError:
            whole = False
        if whole:
            os.write(fd, b"\n")
            return torn.decode("utf-8")
        with open(self.path.with_name(self.path.name + ".torn"), "ab") as aside:
            aside.write(torn + b"\n")
        os.ftruncate(fd, size - len(torn))
        log.error("audit file %s ended in a torn line (%d bytes, moved to %s.torn)", self.path, len(torn),
                  self.path.name)
        return self._last_line(fd)

    def _read_head(self) -> Head | None:
        try:
            data = json.loads(self.head_path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        return Head(int(data["seq"]), str(data["hash"]))

    def _write_head(self, head: Head) -> None:
        tmp = self.head_path.with_name(f".{self.head_path.name}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(canonical({"seq": head.seq, "hash": head.hash}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.head_path)

    def _lines(self) -> Iterator[Stored]:
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                where = f"line {number}"
                try:
                    record = json.loads(raw)
                    stored_hash = record.pop("hash") if isinstance(record, dict) else None
                except ValueError:
                    record, stored_hash = None, None
                if not isinstance(stored_hash, str):
                    yield Stored(raw.decode("utf-8", "replace"), "", where)
                    continue
                yield Stored(canonical(record), stored_hash, where)

    def verify_now(self) -> Verdict:
        if not self.path.exists():
            head = self._read_head()
            return walk([], head)
        with open(self.path, "rb") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_SH)  # no append half-done while we read
            head = self._read_head()
            return walk(self._lines(), head)

    async def verify(self) -> Verdict:
        return await asyncio.to_thread(self.verify_now)

    async def last(self, count: int) -> list[str]:
        def read() -> list[str]:
            if not self.path.exists():
                return []
            kept: deque[str] = deque(maxlen=max(count, 0))
            with open(self.path, "rb") as f:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH)
                kept.extend(stored.body for stored in self._lines())
            return list(kept)

        return await asyncio.to_thread(read)

    async def close(self) -> None:
        return None


# --- PostgreSQL -----------------------------------------------------------------------------------------
_INSERT = "INSERT INTO audit_records (seq, prev_hash, hash, body) VALUES ($1, $2, $3, $4)"


class PostgresAuditStore:
    def __init__(self, dsn: str, *, timeout_s: float = 5.0, migrate: bool = True) -> None:
        self.dsn = dsn
        self.timeout_s = timeout_s
        self.migrate = migrate
        self.where = "PostgreSQL table audit_records"
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()

    async def _connected(self) -> asyncpg.Pool:
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                from rag_server.persistence.migrate import apply_migrations
                from rag_server.persistence.pool import create_pool

                pool = await create_pool(self.dsn, min_size=1, max_size=2, timeout=self.timeout_s)
                try:
                    if self.migrate:
                        async with pool.acquire() as conn:
                            try:
                                await apply_migrations(conn)
                            except Exception as exc:  # a role that may append but not create tables
                                if await conn.fetchval("SELECT to_regclass('audit_records')") is None:
                                    raise
                                log.warning("audit: migrations not applied by this role (%s: %s); the "
                                            "audit tables exist, appending", type(exc).__name__, exc)
                except BaseException:
                    pool.terminate()
                    raise
                self._pool = pool
            return self._pool

    async def append(self, entries: Sequence[Entry]) -> int:
        try:
            pool = await self._connected()
            return await asyncio.wait_for(self._append(pool, entries), self.timeout_s)
        except Exception:
            await self._reset()  # a broken pool is reopened by the next append
            raise

    async def _append(self, pool: asyncpg.Pool, entries: Sequence[Entry]) -> int:
        async with pool.acquire() as conn, conn.transaction():
            head = await conn.fetchrow("SELECT seq, hash FROM audit_head WHERE id FOR UPDATE")
            if head is None:
                raise RuntimeError("audit_head has no row: migration 0005 was not applied as shipped")
            seq, prev = int(head["seq"]), str(head["hash"])
            rows: list[tuple[int, str, str, str]] = []
            for entry in entries:
                seq += 1
                body, digest = link(prev, seq, entry)
                rows.append((seq, prev, digest, body))
                prev = digest
            await conn.executemany(_INSERT, rows)
            await conn.execute("UPDATE audit_head SET seq = $1, hash = $2 WHERE id", seq, prev)
        return seq

    async def _reset(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and not pool.is_closing():
            pool.terminate()

    async def verify(self) -> Verdict:
        pool = await self._connected()
        async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            row = await conn.fetchrow("SELECT seq, hash FROM audit_head WHERE id")
            head = Head(int(row["seq"]), str(row["hash"])) if row is not None else None
            rows = conn.cursor("SELECT seq, prev_hash, hash, body FROM audit_records ORDER BY seq")
            stored = [
                Stored(r["body"], r["hash"], f"row seq={r['seq']}", seq=int(r["seq"]),
                       prev_hash=r["prev_hash"])
                async for r in rows
            ]
        return walk(stored, head)

    async def last(self, count: int) -> list[str]:
        pool = await self._connected()
        rows = await pool.fetch(
            "SELECT body FROM (SELECT seq, body FROM audit_records ORDER BY seq DESC LIMIT $1) AS t"
            " ORDER BY seq",
            count,
        )
        return [str(r["body"]) for r in rows]

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await asyncio.wait_for(pool.close(), self.timeout_s)
        except (TimeoutError, OSError) as exc:
            log.warning("audit pool did not close cleanly: %s", exc)
            pool.terminate()


# --- the background writer ------------------------------------------------------------------------------
class AuditWriter:
    def __init__(
        self,
        store: AuditStore,
        *,
        providers: ProviderVersions | None = None,
        question_mode: QuestionMode = "digest",
        max_pending: int = 10_000,
        batch_size: int = 500,
        flush_interval_s: float = 0.0,
        drain_timeout_s: float = 10.0,
        retry_delays: Sequence[float] = (0.05, 0.25, 1.0),
    ) -> None:
        self.store = store
        self.providers = providers or ProviderVersions()
        self.question_mode: QuestionMode = question_mode
        self.max_pending = max_pending
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.drain_timeout_s = drain_timeout_s
        self.retry_delays = tuple(retry_delays)
        self.written = 0
        self.failures: dict[AuditFailure, int] = dict.fromkeys(AuditFailure, 0)
        self._queue: deque[Entry] = deque()
        self._in_flight: list[Entry] = []
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._hurrying = False  # drain(): write what is queued without waiting to gather more
        self._wake: asyncio.Future[None] | None = None  # the group commit's wait, cut short by drain()

    @property
    def pending(self) -> int:
        return len(self._queue) + len(self._in_flight)

    def record(self, entry: Entry) -> None:
        """Queue `entry` for the chain; never raises, never waits."""
        try:
            if self._closed:
                self._lost([entry], AuditFailure.CLOSED, "the audit writer is closed")
                return
            if self.pending >= self.max_pending:
                self._lost([entry], AuditFailure.QUEUE_FULL, f"{self.pending} records already waiting")
                return
            self._queue.append(entry)
            if self._task is None or self._task.done():
                # A fresh context: the writer's log lines belong to no call (not the first caller's).
                self._task = asyncio.get_running_loop().create_task(
                    self._run(), name="audit-writer", context=contextvars.Context()
                )
        except Exception:  # no running loop, a bug ...
            self._lost([entry], AuditFailure.WRITE_ERROR, "could not queue it", exc_info=True)

    def build_failed(self, rpc: str, correlation_id: str) -> None:
        """The servicer could not build the entry of a call (logged with its traceback, counted)."""
        self.failures[AuditFailure.BUILD_ERROR] += 1
        log.error("audit record of %s (correlation id %s) NOT written: it could not be built", rpc,
                  correlation_id, exc_info=True)

    def _lost(self, entries: Sequence[Entry], reason: AuditFailure, why: str, exc_info: bool = False) -> None:
        self.failures[reason] = self.failures.get(reason, 0) + len(entries)
        for entry in entries:
            log.error("audit record of %s (correlation id %s) NOT written (%s): %s", entry.get("rpc", "?"),
                      entry.get("correlation_id", "?"), reason, why, exc_info=exc_info)

    async def _gather(self) -> None:
        """Group commit: wait up to flush_interval_s for more records (less than a batch queued), so one
        append (its lock, reads and two fsyncs, or one transaction) carries many calls' records."""
        if self.flush_interval_s <= 0 or len(self._queue) >= self.batch_size or self._hurrying:
            return
        self._wake = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait({self._wake}, timeout=self.flush_interval_s)
        finally:
            self._wake = None

    async def _run(self) -> None:
        try:
            while self._queue:
                await self._gather()
                size = min(len(self._queue), self.batch_size)
                self._in_flight = [self._queue.popleft() for _ in range(size)]
                await self._append(self._in_flight)
                self._in_flight = []
        except asyncio.CancelledError:
            self._lost([*self._in_flight, *self._queue], AuditFailure.SHUTDOWN,
                       f"still waiting after the {self.drain_timeout_s:g} s drain (the last batch may have "
                       "been written)")
            self._in_flight = []
            self._queue.clear()
            raise

    async def _append(self, batch: list[Entry]) -> None:
        for attempt in range(len(self.retry_delays) + 1):
            try:
                await self.store.append(batch)
                self.written += len(batch)
                return
            except Exception as exc:  # any store failure: retried, then logged and counted
                if attempt == len(self.retry_delays):
                    why = f"{self.store.where}: {type(exc).__name__}: {exc}"
                    self._lost(batch, AuditFailure.WRITE_ERROR, why)
                    return
                log.warning("audit append to %s failed (%s: %s); retrying", self.store.where,
                            type(exc).__name__, exc)
                await asyncio.sleep(self.retry_delays[attempt])

    async def drain(self, timeout_s: float | None = None) -> None:
        """Wait until the queued records are written; past the timeout the rest is logged and counted."""
        task = self._task
        if task is None or task.done():
            return
        self._hurrying = True
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        try:
            wait_s = self.drain_timeout_s if timeout_s is None else timeout_s
            done, _ = await asyncio.wait({task}, timeout=wait_s)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        finally:
            self._hurrying = False

    async def close(self) -> None:
        """Stop accepting records, drain the queue, close the store."""
        self._closed = True
        await self.drain()
        await self.store.close()


def open_audit(settings: Settings, embedder: Any, reranker: Any, parts: Any) -> AuditWriter:
    """The writer of this server's audit chain: PostgreSQL when RAG_DATABASE_URL is set, else the JSONL
    file of the data dir."""
    store: AuditStore
    if settings.database_url is not None and settings.database_url.get_secret_value():
        store = PostgresAuditStore(settings.database_url.get_secret_value())
    else:
        store = FileAuditStore(settings.data_dir / "audit")
    log.info("audit records: %s (question as %s)", store.where, settings.audit_question)
    return AuditWriter(
        store,
        providers=ProviderVersions.of(settings.embedder, embedder, reranker, parts),
        question_mode=settings.audit_question,
        flush_interval_s=settings.audit_flush_ms / 1000,
    )
