"""An asyncpg pool with JSON codecs for json/jsonb columns."""

from __future__ import annotations

import json

import asyncpg


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def create_pool(
    dsn: str, *, min_size: int = 1, max_size: int = 5, timeout: float = 10.0
) -> asyncpg.Pool:
    """Open a pool (raises when the database is unreachable; callers decide whether to fail open)."""
    pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, timeout=timeout, init=_init_connection
    )
    assert pool is not None
    return pool
