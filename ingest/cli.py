"""`rag-server ingest PDF --data-dir D [--embed-only] [--resume] [--check] [--allow-gate-failures]`.

A rich progress bar per stage, then a summary table (gates, counts, folios inferred, timings, embeddings
computed vs cached, switched or not) and, when a gate failed, per failed gate the first pages involved and
what the parser saw there (furniture dropped and kept, title candidates, headings; ingest.diagnose).
Exit codes: 0 done, 1 gates failed / load failed, 2 bad input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from rag_server.client_channel import add_tls_arguments
from rag_server.config import Settings

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def add_ingest_parser(sub: Any) -> None:
    parser = sub.add_parser("ingest", help="ingest a formulary PDF into a new store generation")
    parser.add_argument("pdf", type=Path, help="the formulary PDF")
    parser.add_argument("--data-dir", default=None, help="data directory (default RAG_DATA_DIR)")
    parser.add_argument("--embed-only", action="store_true", help="compute and cache embeddings; do not load")
    parser.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="reuse cached embeddings (default); --no-resume recomputes every embedding",
    )
    parser.add_argument(
        "--check", action="store_true", help="parse, chunk and report the gates; change nothing"
    )
    parser.add_argument(
        "--allow-gate-failures", action="store_true", help="load and switch even when a gate is non-zero"
    )
    add_tls_arguments(parser)  # to the running server it hands its work to (mutual TLS)
    parser.set_defaults(func=cmd_ingest)


class _Bars:
    """One progress bar per stage, created on the stage's first event."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, stage: str, done: int, total: int, message: str) -> None:
        task = self.tasks.get(stage)
        if task is None:
            task = self.tasks[stage] = self.progress.add_task(stage, total=max(total, 1))
        self.progress.update(
            task, completed=done, total=max(total, 1), description=f"{stage:<8} {message[:48]}"
        )


def summary_table(outcome: Any) -> Table:
    table = Table(title="ingest summary", show_header=True)
    table.add_column("item")
    table.add_column("value", justify="right")
    table.add_row("document_id", outcome.document_id or "-")
    table.add_row("pages", str(outcome.pages))
    table.add_row("monographs", str(outcome.monograph_count))
    table.add_row("sections", str(outcome.section_count))
    table.add_row("chunks (blocks)", f"{outcome.chunk_count} ({outcome.block_count})")
    table.add_row("folios inferred from neighbours", str(getattr(outcome, "inferred_folios", 0)))
    for gate in outcome.gates:
        examples = f"  e.g. {', '.join(list(gate.examples)[:3])}" if gate.count and gate.examples else ""
        table.add_row(f"gate {gate.name}", f"{'[red]' if gate.count else ''}{gate.count}{examples}")
    table.add_row(
        "embeddings computed / cached", f"{outcome.embeddings_computed} / {outcome.embeddings_cached}"
    )
    table.add_row("embedding rate", _rate(outcome))
    estimate = getattr(outcome, "estimate", None)
    if estimate is not None:
        table.add_row(f"full book estimate ({estimate.monographs} monographs)", _estimate(estimate))
    for stage, millis in outcome.timings:
        table.add_row(f"time {stage}", f"{millis / 1000:.2f} s")
    if outcome.manifest is not None:
        table.add_row("generation", outcome.manifest.generation)
        table.add_row("corpus_sha", outcome.manifest.corpus_sha[:16])
        table.add_row("embedding model", f"{outcome.manifest.embedding_model} ({outcome.manifest.dims} dims)")
    table.add_row("switched", "[green]yes" if outcome.switched else "no")
    return table


def _rate(outcome: Any) -> str:
    """Texts embedded per second in this run, and the batches in flight; '-' when nothing was embedded."""
    rate = getattr(outcome, "embed_rate", None)
    if not rate:
        return "- (nothing embedded in this run)"
    concurrency = getattr(outcome, "embed_concurrency", 0)
    return f"{rate:.2f} chunks/s" + (f" ({concurrency} batches at once)" if concurrency > 1 else "")


def _estimate(estimate: Any) -> str:
    from ingest.estimate import duration

    if not estimate.available:
        return str(estimate.note)
    return (f"~{estimate.chunks} chunks, ~{estimate.pages} pages: parse {duration(estimate.parse_seconds)} "
            f"+ embed {duration(estimate.embed_seconds)} with {estimate.embedding_model} = "
            f"{duration(estimate.total_seconds)} ({estimate.note})")


def print_diagnostics(diagnostics: list[Any], console: Console) -> None:
    """Per failed gate, the first pages involved and what the parser saw there (ingest.diagnose)."""
    if not diagnostics:
        return
    from ingest.diagnose import render

    console.print("[bold]why the gates failed[/bold] (what the parser saw on the first pages involved)")
    for line in render(diagnostics):
        console.print(line, markup=False, highlight=False)


def _diagnose_locally(pdf: Path, console: Console, err: Console) -> None:
    """The server's summary carries no diagnostics: parse the PDF here to show them (no store is touched)."""
    from ingest.build import IngestInputError, build_chunks

    try:
        result = build_chunks(pdf)
    except IngestInputError as exc:
        err.print(f"[yellow]no diagnostics:[/yellow] {exc.kind}: {exc.message}")
        return
    print_diagnostics(result.diagnostics, console)


def _ingest_remote(target: str, pdf: Path, args: argparse.Namespace, console: Console, err: Console) -> int:
    """The data dir belongs to a running server: upload the PDF to it and ingest there."""
    import grpc

    from ingest.remote import describe_rpc_error, ingest_via_server, is_bad_input, outcome_from_summary

    err.print(f"a server at {target} owns this data dir: ingesting through it (the corpus keeps serving)")
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            summary = ingest_via_server(
                target,
                pdf,
                embed_only=args.embed_only,
                resume=args.resume,
                check_only=args.check,
                allow_gate_failures=args.allow_gate_failures,
                progress=_Bars(progress),
            )
    except grpc.RpcError as exc:
        err.print(f"[red]error:[/red] {describe_rpc_error(exc)}")
        return EXIT_BAD_INPUT if is_bad_input(exc) else EXIT_FAILED
    except KeyboardInterrupt:
        err.print("[yellow]interrupted:[/yellow] the server drops the half-written generation")
        return EXIT_INTERRUPTED
    outcome = outcome_from_summary(summary)
    console.print(summary_table(outcome))
    if outcome.failed_gates:
        _diagnose_locally(pdf, console, err)
    print(outcome.message)
    return EXIT_FAILED if args.check and outcome.failed_gates else EXIT_OK


def cmd_ingest(args: argparse.Namespace) -> int:
    from ingest.build import IngestInputError
    from ingest.pipeline import IngestError, run_ingest
    from ingest.remote import running_server_target
    from rag_server.providers.factory import build_embedder
    from rag_server.store.factory import open_store

    overrides: dict[str, object] = {}
    if args.data_dir:
        overrides["data_dir"] = Path(args.data_dir)
    settings = Settings(**overrides)  # type: ignore[arg-type]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    console = Console(stderr=True)
    err = Console(stderr=True)
    pdf: Path = args.pdf
    if not pdf.is_file():
        err.print(f"[red]error:[/red] no such file: {pdf}")
        return EXIT_BAD_INPUT
    outcome: Any = None
    target = running_server_target(settings.address_file)
    if target is not None:
        return _ingest_remote(target, pdf, args, console, err)
    try:
        embedder = build_embedder(settings)
        store = open_store(settings)
    except Exception as exc:
        err.print(f"[red]error:[/red] {exc}")
        return EXIT_FAILED
    try:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            outcome = run_ingest(
                pdf,
                settings,
                store=store,
                embedder=embedder,
                embed_only=args.embed_only,
                resume=args.resume,
                check_only=args.check,
                allow_gate_failures=args.allow_gate_failures,
                progress=_Bars(progress),
            )
    except IngestInputError as exc:
        err.print(f"[red]error:[/red] {exc.kind}: {exc.message} (nothing changed)")
        return EXIT_BAD_INPUT
    except IngestError as exc:
        console.print(summary_table(exc.outcome))
        print_diagnostics(exc.outcome.diagnostics, console)
        err.print(f"[red]error:[/red] {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        err.print("[yellow]interrupted:[/yellow] the half-written generation was dropped; nothing changed")
        return EXIT_INTERRUPTED
    except Exception as exc:
        err.print(f"[red]error:[/red] {type(exc).__name__}: {exc} (the previous corpus is still served)")
        return EXIT_FAILED
    finally:
        store.close()
    console.print(summary_table(outcome))
    print_diagnostics(outcome.diagnostics if outcome.failed_gates else [], console)
    print(outcome.message, file=sys.stderr if outcome.failed_gates and args.check else sys.stdout)
    if args.check and outcome.failed_gates:
        return EXIT_FAILED
    return EXIT_OK
