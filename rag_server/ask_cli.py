"""`rag-server ask "question" [--conversation ID]`: one Ask, printed as it streams.

It asks the server that owns the data dir (its address file), or `--target`; with neither, it starts the
service in process on that data dir for the one question. Progress lines, then each verified block as it
arrives, then the decision, the citations with their printed pages and the quick replies."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

import grpc

from rag_server.client_channel import add_tls_arguments, open_channel
from rag_server.config import Settings
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc
from rag_server.gen.rag.v1 import common_pb2 as pb

EXIT_OK, EXIT_NOT_ANSWERED, EXIT_ERROR = 0, 1, 2


def add_ask_parser(sub: Any) -> None:
    parser = sub.add_parser("ask", help="ask a question and print the streamed, cited answer")
    parser.add_argument("question")
    parser.add_argument("--conversation", default="", help="conversation_id: follow-ups keep its drug")
    parser.add_argument("--target", default="", help="host:port of a running server")
    parser.add_argument("--data-dir", default=None, help="data directory (default RAG_DATA_DIR)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    add_tls_arguments(parser)  # --tls-ca, --tls-cert, --tls-key (mutual TLS)
    parser.set_defaults(func=cmd_ask)


def cmd_ask(args: argparse.Namespace) -> int:
    overrides: dict[str, object] = {"port": 0}
    if args.data_dir:
        overrides["data_dir"] = Path(args.data_dir)
    settings = Settings(**overrides)  # type: ignore[arg-type]
    try:
        return asyncio.run(_ask(settings, args))
    except grpc.aio.AioRpcError as exc:
        print(f"rag-server ask: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return EXIT_ERROR


async def _ask(settings: Settings, args: argparse.Namespace) -> int:
    from ingest.remote import running_server_target

    final: answer_pb2.AskFinal | None = None
    target = args.target or running_server_target(settings.address_file)
    async with _server(settings, target) as where, open_channel(where) as channel:
        stub = answer_pb2_grpc.AnswerServiceStub(channel)
        request = answer_pb2.AskRequest(query=args.question, conversation_id=args.conversation)
        async for event in stub.Ask(request, timeout=args.timeout):
            final = show(event, sys.stdout) or final
    if final is None:
        return EXIT_ERROR
    answered = final.decision.kind in (pb.DECISION_KIND_ANSWERABLE, pb.DECISION_KIND_VERIFY_PDF)
    return EXIT_OK if answered else EXIT_NOT_ANSWERED


@contextlib.asynccontextmanager
async def _server(settings: Settings, target: str | None) -> AsyncIterator[str]:
    if target:
        yield target
        return
    from rag_server.server import start_server

    running = await start_server(settings)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        await running.stop(0)


def show(event: answer_pb2.AskResponse, out: TextIO) -> answer_pb2.AskFinal | None:
    """Print one streamed event; the final message is returned."""
    kind = event.WhichOneof("event")
    if kind == "progress":
        print(f"[{event.progress.stage}] {event.progress.message}", file=out, flush=True)
    elif kind == "block":
        _block(event.block, out)
    elif kind == "final":
        _final(event.final, out)
        return event.final
    return None


def _block(block: pb.AnswerBlock, out: TextIO) -> None:
    print(f"\n== {block.title}", file=out)
    for claim in block.claims:
        print(f"  - {claim.text}  [{', '.join(claim.source_ids)}]", file=out)
    if block.HasField("table"):
        _table(block.table, out)
    if block.requires_visual_check:
        pages = ", ".join(str(p.printed_page or p.physical_page) for p in block.pages)
        print(f"  VERIFY_PDF: trang {pages}", file=out)
    if block.note:
        print(f"  ({block.note})", file=out)
    out.flush()


def _table(table: pb.TableView, out: TextIO) -> None:
    """The table's cells as lifted from the page, one row per line (cells separated by " | "), and
    whether its image came along: a table is shown as printed and checked on the page, never paraphrased."""
    for row in table.rows:
        print("  | " + " | ".join(cell.replace("\n", " ") for cell in row.cells) + " |", file=out)
    if table.image_png:
        print(f"  [ảnh bảng: {len(table.image_png)} byte PNG, {table.chunk_id}]", file=out)


def _final(final: answer_pb2.AskFinal, out: TextIO) -> None:
    decision = final.decision
    kind = pb.DecisionKind.Name(decision.kind).removeprefix("DECISION_KIND_")
    reason = pb.DecisionReason.Name(decision.reason).removeprefix("DECISION_REASON_").lower()
    print(f"\nDecision: {kind} ({reason}) — {decision.message}", file=out)
    if final.citations:
        print("Citations:", file=out)
        for c in final.citations:
            page = c.source.printed_page or c.source.physical_page
            print(f"  {c.chunk_id} — {c.drug_name}, {c.section_title}, trang {page}", file=out)
    if final.quick_replies:
        print("Quick replies: " + " | ".join(final.quick_replies), file=out)
    if final.disclaimer:
        print(final.disclaimer, file=out)
    print(f"trace_id {final.trace_id}, correlation_id {final.correlation_id}", file=out, flush=True)
