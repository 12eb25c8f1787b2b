"""Conversation memory in PostgreSQL: append turns, read the most recent ones. Both are fail-open.
asyncpg (the `postgres` extra) is imported when a store is used, not when Turn is."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("rag_server.persistence")

Role = Literal["user", "assistant"]


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

    async def append(self, conversation_id: str, turns: list[Turn]) -> bool:
        """Append turns after the last stored one; False (logged) when the database fails."""
        try:
            await asyncio.wait_for(self._append(conversation_id, turns), self.timeout_s)
        except _failures() as exc:
            log.warning("conversation %s not saved (fail-open): %s", conversation_id, exc)
            return False
        return True

    async def _append(self, conversation_id: str, turns: list[Turn]) -> None:
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO conversations (conversation_id) VALUES ($1) "
                "ON CONFLICT (conversation_id) DO UPDATE SET updated_at = now()",
                conversation_id,
            )
            # Row lock on the conversation serialises concurrent appends to it.
            await conn.execute(
                "SELECT 1 FROM conversations WHERE conversation_id = $1 FOR UPDATE", conversation_id
            )
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

    async def recent(self, conversation_id: str, limit: int = 12) -> list[Turn]:
        """The last `limit` turns, oldest first; [] when the database fails (logged)."""
        try:
            rows = await asyncio.wait_for(
                self.pool.fetch(
                    "SELECT turn_index, role, content, frame, correlation_id FROM conversation_turns "
                    "WHERE conversation_id = $1 ORDER BY turn_index DESC LIMIT $2",
                    conversation_id, limit,
                ),
                self.timeout_s,
            )
        except _failures() as exc:
            log.warning("conversation %s not read (fail-open): %s", conversation_id, exc)
            return []
        return [
            Turn(role=r["role"], content=r["content"], turn_index=r["turn_index"], frame=r["frame"],
                 correlation_id=r["correlation_id"])
            for r in reversed(rows)
        ]
