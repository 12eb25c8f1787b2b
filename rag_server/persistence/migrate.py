"""Apply migrations/NNNN_name.sql in order, each inside its own transaction, recorded in schema_migrations.

Idempotent (applied versions are skipped), safe to run concurrently (a session advisory lock serialises
runners) and strict: an applied migration whose file changed is an error, not something to re-run.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import asyncpg

log = logging.getLogger("rag_server.persistence")

MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# pg_advisory_lock key: any constant shared by every runner of this schema.
ADVISORY_LOCK_KEY = 0x7261675F6D6967  # "rag_mig"

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


class MigrationError(Exception):
    pass


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def default_migrations_dir() -> Path:
    """<repo>/migrations (the package is installed editable from the repo)."""
    return Path(__file__).resolve().parents[2] / "migrations"


def discover_migrations(directory: Path) -> list[Migration]:
    if not directory.is_dir():
        raise MigrationError(f"migrations folder not found: {directory}")
    found: dict[str, Migration] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        m = MIGRATION_NAME.fullmatch(path.name)
        if not m:
            raise MigrationError(f"bad migration file name {path.name!r}: expected NNNN_lower_snake.sql")
        version = m.group(1)
        if version in found:
            other = found[version].path.name
            raise MigrationError(f"two migrations share version {version}: {other}, {path.name}")
        found[version] = Migration(version, m.group(2), path, path.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


async def apply_migrations(conn: asyncpg.Connection, directory: Path | None = None) -> list[str]:
    """Apply pending migrations; return the versions applied by this call (empty when up to date)."""
    migrations = discover_migrations(directory or default_migrations_dir())
    await conn.execute("SELECT pg_advisory_lock($1)", ADVISORY_LOCK_KEY)
    try:
        await conn.execute(_BOOKKEEPING)
        rows = await conn.fetch("SELECT version, checksum FROM schema_migrations")
        applied = {r["version"]: r["checksum"] for r in rows}
        for version in applied:
            if version not in {m.version for m in migrations}:
                log.warning("schema_migrations has version %s with no file", version)
        done: list[str] = []
        for migration in migrations:
            recorded = applied.get(migration.version)
            if recorded is not None:
                if recorded != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.path.name} changed after it was applied; "
                        "add a new migration instead of editing an applied one"
                    )
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version, migration.name, migration.checksum,
                )
            log.info("applied migration %s", migration.path.name)
            done.append(migration.version)
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ADVISORY_LOCK_KEY)


async def migrate(dsn: str, directory: Path | None = None) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        return await apply_migrations(conn, directory)
    finally:
        await conn.close()
