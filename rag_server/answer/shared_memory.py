"""Conversation memory shared by the workers of `rag-server serve --workers N` when no database is
configured: a SQLite file in the run directory (made by the parent, removed when it stops), so a follow-up
that reaches another worker (a new connection lands on any of them) keeps its conversation, exactly as the
in-process memory of one server does. Same bounds (the most recent RAG_MEMORY_CONVERSATIONS conversations,
the last turns of each) and the same owner rule: the first caller of a conversation_id claims it
atomically (INSERT OR IGNORE, then the stored owner compared, in one transaction).

The SQLite calls run on one thread of their own (WAL journal, a busy timeout for the other workers'
writes); a memory that cannot be read is an empty history and a turn that cannot be saved is logged,
as for PostgreSQL. Ownership is never failed open: a check that cannot run refuses nothing but reads
and writes nothing either."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from rag_server.persistence.conversations import ConversationNotOwned, Turn

log = logging.getLogger("rag_server.answer.memory")
T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, owner TEXT NOT NULL, touched INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS turns (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL, role TEXT NOT NULL,
  content TEXT NOT NULL, turn_index INTEGER NOT NULL, frame TEXT, correlation_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns (conversation_id, seq);
CREATE INDEX IF NOT EXISTS conversations_by_age ON conversations (touched);
"""
PRUNE_EVERY = 256  # appends between two prunes of the oldest conversations


SETUP_ATTEMPTS = 20  # opening the shared file while other workers do (about 10 s in all)


class SharedMemory:
    def __init__(self, path: Path, conversations: int = 10_000, turns: int = 24) -> None:
        self.path = path
        self._max_conversations = conversations
        self._max_turns = turns
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="rag-memory")
        self._local = threading.local()
        self._appends = 0

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            for attempt in range(SETUP_ATTEMPTS):
                # several workers opening the file at once: switching to WAL takes a lock the busy timeout
                # does not wait for, so the loser retries
                try:
                    db.execute("PRAGMA journal_mode=WAL")
                    db.execute("PRAGMA synchronous=NORMAL")
                    db.executescript(SCHEMA)
                    break
                except sqlite3.OperationalError:
                    if attempt == SETUP_ATTEMPTS - 1:
                        raise
                    time.sleep(0.05 * (attempt + 1))
            self._local.db = db
        return db

    async def _run(self, fn: Any, *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def _claim(self, db: sqlite3.Connection, conversation_id: str, owner: str) -> None:
        """Under the caller's transaction: claim a new conversation, refuse another caller's."""
        db.execute("INSERT OR IGNORE INTO conversations (id, owner, touched) VALUES (?, ?, "
                   "COALESCE((SELECT MAX(touched) FROM conversations), 0) + 1)", (conversation_id, owner))
        row = db.execute("SELECT owner FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if row is None or row[0] != owner:
            raise ConversationNotOwned(conversation_id)

    def _check(self, conversation_id: str, owner: str) -> None:
        db = self._db()
        with _transaction(db):
            self._claim(db, conversation_id, owner)

    def _recent(self, conversation_id: str, limit: int, owner: str) -> list[Turn]:
        db = self._db()
        with _transaction(db):
            self._claim(db, conversation_id, owner)
            rows = db.execute(
                "SELECT role, content, turn_index, frame, correlation_id FROM turns "
                "WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?", (conversation_id, max(0, limit)),
            ).fetchall()
        return [Turn(r[0], r[1], r[2], json.loads(r[3]) if r[3] else None, r[4]) for r in reversed(rows)]

    def _append(self, conversation_id: str, turns: list[Turn], owner: str) -> None:
        db = self._db()
        with _transaction(db):
            self._claim(db, conversation_id, owner)
            db.execute("UPDATE conversations SET touched = (SELECT MAX(touched) FROM conversations) + 1 "
                       "WHERE id = ?", (conversation_id,))
            db.executemany(
                "INSERT INTO turns (conversation_id, role, content, turn_index, frame, correlation_id) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(conversation_id, t.role, t.content, t.turn_index,
                  json.dumps(t.frame, ensure_ascii=False) if t.frame is not None else None, t.correlation_id)
                 for t in turns],
            )
            db.execute(
                "DELETE FROM turns WHERE conversation_id = ? AND seq NOT IN (SELECT seq FROM turns "
                "WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?)",
                (conversation_id, conversation_id, self._max_turns),
            )
            self._appends += 1
            if self._appends % PRUNE_EVERY == 0:
                db.execute("DELETE FROM conversations WHERE id IN (SELECT id FROM conversations "
                           "ORDER BY touched DESC LIMIT -1 OFFSET ?)", (self._max_conversations,))
                db.execute("DELETE FROM turns WHERE conversation_id NOT IN (SELECT id FROM conversations)")

    async def check_owner(self, conversation_id: str, owner: str) -> None:
        try:
            await self._run(self._check, conversation_id, owner)
        except sqlite3.Error:
            log.warning("conversation memory unavailable (ownership not checked, nothing read)",
                        exc_info=True)

    async def recent(self, conversation_id: str, limit: int, owner: str) -> list[Turn]:
        try:
            return await self._run(self._recent, conversation_id, limit, owner)
        except sqlite3.Error:
            log.warning("conversation memory unavailable (an empty history)", exc_info=True)
            return []

    async def append(self, conversation_id: str, turns: list[Turn], owner: str) -> None:
        try:
            await self._run(self._append, conversation_id, turns, owner)
        except sqlite3.Error:
            log.warning("conversation turn not saved (fail-open)", exc_info=True)


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any error): the claim and what follows are atomic across
    the workers."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
