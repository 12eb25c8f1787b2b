"""Conversation memory in PostgreSQL: append turns, read the most recent ones. Both are fail-open.
asyncpg (the `postgres` extra) is imported when a store is used, not when Turn is.

A conversation belongs to its owner (`conversations.owner`, migration 0005): the caller that started it,
the API key's name or ANONYMOUS_OWNER while auth is off. Every read and write names the caller and claims
a new conversation for it in the same transaction (INSERT ... ON CONFLICT DO NOTHING, then compare), so
of two callers racing to start one conversation_id exactly one owns it; the other gets
ConversationNotOwned, never the owner's turns. Ownership survives a database failure: a check that cannot
run reads and writes nothing (fail-open means an empty history, not someone else's)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("rag_server.persistence")

Role = Literal["user", "assistant"]
# The owner of conversations started while auth is off, and of rows older than the owner column. A key
# named like this owns nothing anonymous (rag_server.security.auth.conversation_owner).
ANONYMOUS_OWNER = "anonymous"


class ConversationNotOwned(Exception):
    """The conversation belongs to another caller: nothing of it may be read or written by this one."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id!r} belongs to another caller")
        self.conversation_id = conversation_id


def _failures() -> tuple[type[BaseException], ...]:
    import asyncpg

    return (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)


@dataclass(frozen=True)
class Turn:
    role: Role
    content: str
    turn_index: int = -1
    frame: dict[str, Any] | None = None
    correlation_id: str = ""


class ConversationStore:
    def __init__(self, pool: asyncpg.Pool, *, timeout_s: float = 2.0) -> None:
        self.pool = pool
        self.timeout_s = timeout_s

    async def check_owner(self, conversation_id: str, owner: str) -> bool:
        """Claim the conversation for `owner` when it is new; ConversationNotOwned when another caller
        owns it. False (logged) when the database fails."""
        try:
            await asyncio.wait_for(self._check_owner(conversation_id, owner), self.timeout_s)
        except _failures() as exc:
            log.warning("conversation %s not checked (fail-open): %s", conversation_id, exc)
            return False
        return True

    async def _check_owner(self, conversation_id: str, owner: str) -> None:
        async with self.pool.acquire() as conn:
            await _claim(conn, conversation_id, owner)

    async def append(self, conversation_id: str, turns: list[Turn], *, owner: str) -> bool:
        """Append turns after the last stored one, if `owner` owns the conversation (claimed when new;
        ConversationNotOwned otherwise, nothing written); False (logged) when the database fails."""
        try:
            await asyncio.wait_for(self._append(conversation_id, turns, owner), self.timeout_s)
        except _failures() as exc:
            log.warning("conversation %s not saved (fail-open): %s", conversation_id, exc)
            return False
        return True

    async def _append(self, conversation_id: str, turns: list[Turn], owner: str) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            # The upsert takes the row lock (serialising concurrent appends to the conversation) and
            # returns the stored owner: a new row is this caller's, an existing one keeps its owner.
            stored = await conn.fetchval(
                "INSERT INTO conversations (conversation_id, owner) VALUES ($1, $2) "
                "ON CONFLICT (conversation_id) DO UPDATE SET updated_at = now() RETURNING owner",
                conversation_id, owner,
            )
            if stored != owner:
                raise ConversationNotOwned(conversation_id)  # rolls back the updated_at too
            last = await conn.fetchval(
                "SELECT coalesce(max(turn_index), -1) FROM conversation_turns WHERE conversation_id = $1",
                conversation_id,
            )
            await conn.executemany(
                "INSERT INTO conversation_turns"
                " (conversation_id, turn_index, role, content, frame, correlation_id)"
                " VALUES ($1, $2, $3, $4, $5, $6)",
                [
                    (conversation_id, last + 1 + i, t.role, t.content, t.frame, t.correlation_id)
                    for i, t in enumerate(turns)
                ],
            )

    async def recent(self, conversation_id: str, limit: int = 12, *, owner: str) -> list[Turn]:
        """The last `limit` turns, oldest first, if `owner` owns the conversation (claimed when new, so
        the caller that reads a new id first is its owner; ConversationNotOwned otherwise); [] when the
        database fails (logged)."""
        try:
            rows = await asyncio.wait_for(self._recent(conversation_id, limit, owner), self.timeout_s)
        except _failures() as exc:
            log.warning("conversation %s not read (fail-open): %s", conversation_id, exc)
            return []
        return [
            Turn(role=r["role"], content=r["content"], turn_index=r["turn_index"], frame=r["frame"],
                 correlation_id=r["correlation_id"])
            for r in reversed(rows)
        ]

    async def _recent(self, conversation_id: str, limit: int, owner: str) -> list[Any]:
        async with self.pool.acquire() as conn, conn.transaction():
            await _claim(conn, conversation_id, owner)
            return list(await conn.fetch(
                "SELECT turn_index, role, content, frame, correlation_id FROM conversation_turns "
                "WHERE conversation_id = $1 ORDER BY turn_index DESC LIMIT $2",
                conversation_id, limit,
            ))


async def _claim(conn: asyncpg.Connection, conversation_id: str, owner: str) -> None:
    """Make `owner` the owner of a new conversation, or check it owns the existing one. Atomic under
    concurrency: of two inserts of one id the second waits for the first to commit and then does nothing,
    and the owner read afterwards is the one committed."""
    await conn.execute(
        "INSERT INTO conversations (conversation_id, owner) VALUES ($1, $2) "
        "ON CONFLICT (conversation_id) DO NOTHING",
        conversation_id, owner,
    )
    stored = await conn.fetchval(
        "SELECT owner FROM conversations WHERE conversation_id = $1", conversation_id
    )
    if stored != owner:
        raise ConversationNotOwned(conversation_id)
