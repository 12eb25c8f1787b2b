"""`rag-server serve | ingest | ask | eval | migrate | keys | audit`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from rag_server.config import Settings


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, object] = {}
    if getattr(args, "port", None) is not None:
        overrides["port"] = args.port
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    if getattr(args, "metrics_port", None) is not None:
        overrides["metrics_port"] = args.metrics_port
    if getattr(args, "workers", None) is not None:
        overrides["workers"] = args.workers
    return Settings(**overrides)  # type: ignore[arg-type]


def _cmd_serve(args: argparse.Namespace) -> int:
    from rag_server.extras import MissingExtra, check_extras
    from rag_server.lifecycle import StartupError
    from rag_server.store.common import StoreError

    settings = _settings(args)
    from rag_server.listen import ListenError
    from rag_server.observability.logs import configure_logging, say

    parent = settings.serving_processes() > 1
    # RAG_LOG_LEVEL, RAG_LOG_FORMAT (text | json), RAG_LOG_QUESTIONS; a parent of workers runs no native code
    configure_logging(settings, process="parent" if parent else "", native=not parent)
    try:
        check_extras(settings)
        count = settings.serving_processes()
        if count > 1:  # the parent of N serving processes (rag_server/workers): no grpc object here
            from rag_server.workers.supervisor import serve_workers

            return serve_workers(settings, count)
        if settings.workers > 1:
            logging.getLogger("rag_server").warning(
                "RAG_STORE=qdrant with a local RAG_QDRANT_URL belongs to one process: serving with one")
        from rag_server.server import serve

        asyncio.run(serve(settings))
    except ListenError as exc:  # a port in use: found before anything opened or loaded
        say(f"rag-server: {exc}", sys.stderr, logging.ERROR)
        return 2
    except (StoreError, StartupError, MissingExtra) as exc:
        say(f"rag-server: cannot start: {exc}", sys.stderr, logging.ERROR)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-server", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC server")
    serve.add_argument("--port", type=int, default=None, help="port (default RAG_PORT or 50051)")
    serve.add_argument("--host", default=None, help="bind address (default RAG_HOST or 127.0.0.1)")
    serve.add_argument("--data-dir", default=None, help="data directory (default RAG_DATA_DIR)")
    serve.add_argument(
        "--metrics-port", type=int, default=None,
        help="serve Prometheus metrics on http://RAG_METRICS_HOST:PORT/metrics (default RAG_METRICS_PORT, "
        "0: off)",
    )
    serve.add_argument(
        "--workers", type=int, default=None,
        help="serving processes sharing the port (default RAG_WORKERS: 0, one per CPU core; 1: this process "
        "alone); the first owns ingestion and the store's generation switch",
    )
    serve.set_defaults(func=_cmd_serve)

    from ingest.cli import add_ingest_parser

    add_ingest_parser(sub)

    from rag_server.ask_cli import add_ask_parser

    add_ask_parser(sub)

    from rag_server.evaluation.eval_cli import add_eval_parser

    add_eval_parser(sub)

    from rag_server.persistence.migrate_cli import add_migrate_parser

    add_migrate_parser(sub)

    from rag_server.security.keys_cli import add_keys_parser

    add_keys_parser(sub)

    from rag_server.persistence.audit_cli import add_audit_parser

    add_audit_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from rag_server.client_channel import ClientTlsError, use_tls_arguments
    from rag_server.extras import MissingExtra

    try:
        if hasattr(args, "tls_ca"):  # a command that calls a server: its TLS files, read before it starts
            use_tls_arguments(args)
        code: int = args.func(args)
    except (MissingExtra, ClientTlsError) as exc:  # a missing SDK, a bad TLS file: one line, no traceback
        print(f"rag-server {args.command}: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
