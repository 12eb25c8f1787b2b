"""`rag-server keys add | list | revoke`: the API keys of a data dir (<data-dir>/keys.json).

`add` prints the new key alone on its last line (`... | tail -1`), the only time it is ever shown; the
file keeps a salted hash. A running server sees every change at its next call: no restart.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rag_server.config import Settings
from rag_server.security.keys import SCOPES, KeyStore, KeyStoreError


def _store(args: argparse.Namespace) -> KeyStore:
    if args.data_dir:
        return KeyStore(Path(args.data_dir))
    settings = Settings()  # type: ignore[call-arg]  # RAG_DATA_DIR or the default
    return KeyStore(settings.data_dir)


def _cmd_add(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        record, key = store.add(args.name, args.scopes)
    except (KeyStoreError, OSError) as exc:
        print(f"rag-server keys add: {exc}", file=sys.stderr)
        return 2
    print(f"added API key {record.name!r} (scopes: {','.join(record.scopes)}) to {store.path}")
    print("it is shown this once (only its salted hash is stored); send it as 'authorization: Bearer <key>':")
    print(key, flush=True)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        records = store.records()
    except (KeyStoreError, OSError) as exc:
        print(f"rag-server keys list: {exc}", file=sys.stderr)
        return 1
    if not records:
        print(f"no API keys in {store.path}: auth is off (every caller is admitted)")
        return 0
    rows = [("NAME", "SCOPES", "CREATED", "REVOKED")]
    rows += [(r.name, ",".join(r.scopes), r.created_at, r.revoked_at or "-") for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
    return 0


def _cmd_revoke(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        record = store.revoke(args.name)
    except (KeyStoreError, OSError) as exc:
        print(f"rag-server keys revoke: {exc}", file=sys.stderr)
        return 1
    print(f"revoked API key {record.name!r} at {record.revoked_at} (a running server refuses it from its "
          "next call; auth stays on while the key file holds any key)")
    return 0


def add_keys_parser(sub: Any) -> None:
    parser = sub.add_parser("keys", help="manage API keys (add | list | revoke)")
    keys = parser.add_subparsers(dest="keys_command", required=True)
    data_dir = argparse.ArgumentParser(add_help=False)
    data_dir.add_argument("--data-dir", default=None, help="data directory (default RAG_DATA_DIR)")

    add = keys.add_parser("add", parents=[data_dir], help="create a key; prints it once, on the last line")
    add.add_argument("name", help="the key's name (1-64 letters, digits, '.', '_', '-'), unique")
    add.add_argument("--scopes", default="query",
                     help=f"comma-separated, from {', '.join(SCOPES)} (admin implies all; default query)")
    add.set_defaults(func=_cmd_add)

    listing = keys.add_parser("list", parents=[data_dir], help="names, scopes and dates (never a key)")
    listing.set_defaults(func=_cmd_list)

    revoke = keys.add_parser("revoke", parents=[data_dir], help="revoke a key by name")
    revoke.add_argument("name")
    revoke.set_defaults(func=_cmd_revoke)
