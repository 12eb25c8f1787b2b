"""`rag-server migrate`: apply migrations/*.sql to the PostgreSQL database (idempotent)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from rag_server.config import Settings


def _cmd_migrate(args: argparse.Namespace) -> int:
    from rag_server.extras import Extra, require

    require(Extra.POSTGRES, "rag-server migrate")
    import asyncpg

    from rag_server.persistence.migrate import MigrationError, default_migrations_dir, migrate

    dsn = args.database_url
    if not dsn:
        url = Settings().database_url  # type: ignore[call-arg]
        dsn = url.get_secret_value() if url is not None else ""
    if not dsn:
        print("rag-server migrate: set RAG_DATABASE_URL or pass --database-url", file=sys.stderr)
        return 2
    directory = Path(args.migrations_dir) if args.migrations_dir else default_migrations_dir()
    try:
        applied = asyncio.run(migrate(dsn, directory))
    except MigrationError as exc:
        print(f"rag-server migrate: {exc}", file=sys.stderr)
        return 1
    except (OSError, asyncpg.InterfaceError) as exc:
        print(f"rag-server migrate: cannot reach the database: {exc}", file=sys.stderr)
        return 1
    except asyncpg.PostgresError as exc:
        print(f"rag-server migrate: {type(exc).__name__}: {exc} (nothing of that migration was kept)",
              file=sys.stderr)
        return 1
    print(f"applied: {', '.join(applied)}" if applied else "database schema is up to date")
    return 0


def add_migrate_parser(sub: Any) -> None:
    parser = sub.add_parser("migrate", help="apply migrations/*.sql to PostgreSQL (idempotent)")
    parser.add_argument("--database-url", default=None, help="PostgreSQL DSN (default RAG_DATABASE_URL)")
    parser.add_argument("--migrations-dir", default=None, help="folder of NNNN_name.sql files")
    parser.set_defaults(func=_cmd_migrate)
