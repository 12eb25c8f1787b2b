"""`rag-server audit verify | show`: check the audit chain, print its last records.

The chain is read where the server writes it: PostgreSQL with `--database-url` (or RAG_DATABASE_URL when
no flag is given), else `<data-dir>/audit/audit.jsonl` (`--data-dir`, or RAG_DATA_DIR). `verify` exits 0
when the chain is intact, 1 when a record was changed, removed or reordered (printing the first sequence
number where it breaks and why), 2 when the chain cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from rag_server.config import Settings
from rag_server.persistence.audit import Verdict, summary
from rag_server.persistence.audit_store import AuditStore, FileAuditStore


def _store(args: argparse.Namespace) -> AuditStore:
    dsn = args.database_url or ""
    data_dir = Path(args.data_dir) if args.data_dir else None
    if not dsn and data_dir is None:
        settings = Settings()  # type: ignore[call-arg]  # RAG_DATABASE_URL, RAG_DATA_DIR
        url = settings.database_url
        dsn = url.get_secret_value() if url is not None else ""
        data_dir = settings.data_dir
    if dsn:
        from rag_server.extras import Extra, require

        require(Extra.POSTGRES, "rag-server audit --database-url")
        from rag_server.persistence.audit_store import PostgresAuditStore

        return PostgresAuditStore(dsn, migrate=False)  # reads only: the schema is left as it is
    assert data_dir is not None
    return FileAuditStore(data_dir / "audit")


async def _run(store: AuditStore, work: Any) -> Any:
    try:
        return await work
    finally:
        await store.close()


def _unreadable(command: str, store: AuditStore, exc: Exception) -> int:
    print(f"rag-server audit {command}: cannot read {store.where}: {type(exc).__name__}: {exc}",
          file=sys.stderr)
    return 2


def _cmd_verify(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        verdict: Verdict = asyncio.run(_run(store, store.verify()))
    except Exception as exc:  # unreachable database, no audit tables, unreadable file ...
        return _unreadable("verify", store, exc)
    for warning in verdict.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if verdict.intact:
        head = verdict.head
        where = f"head seq {head.seq}, hash {head.hash}" if head is not None else "empty"
        print(f"audit chain intact: {verdict.records} records in {store.where} ({where})")
        return 0
    print(f"audit chain BROKEN at seq {verdict.broken_at} ({verdict.kind}): {verdict.why}")
    print(f"{verdict.records} records before it are intact; read {store.where}")
    return 1


def _cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        bodies: list[str] = asyncio.run(_run(store, store.last(args.last)))
    except Exception as exc:
        return _unreadable("show", store, exc)
    if not bodies:
        print(f"no audit records in {store.where}")
        return 0
    for body in bodies:
        try:
            s = summary(body)
        except ValueError:
            print("(not a JSON record: run rag-server audit verify)")
            continue
        question = s["question"] if s["question"] is not None else f"sha256:{s['question_sha256'] or '-'}"
        print(f"{s['seq']}\t{s['at']}\t{s['rpc']}\t{s['caller']}\t{s['correlation_id']}\t{s['decision']}\t"
              f"{question}")
    return 0


def add_audit_parser(sub: Any) -> None:
    parser = sub.add_parser("audit", help="check the audit chain of Retrieve and Ask calls (verify | show)")
    audit = parser.add_subparsers(dest="audit_command", required=True)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--data-dir", default=None,
                       help="data directory of the JSONL chain (default RAG_DATA_DIR)")
    where.add_argument("--database-url", default=None,
                       help="PostgreSQL DSN of the chain (default RAG_DATABASE_URL when no --data-dir)")

    verify = audit.add_parser(
        "verify", parents=[where],
        help="walk the chain: exit 0 intact, 1 changed / removed / reordered (first broken seq), "
        "2 unreadable",
    )
    verify.set_defaults(func=_cmd_verify)

    show = audit.add_parser(
        "show", parents=[where],
        help="the last records: seq, time, rpc, caller, correlation id, decision, question",
    )
    show.add_argument("--last", type=int, default=20, help="how many records (default 20)")
    show.set_defaults(func=_cmd_show)
