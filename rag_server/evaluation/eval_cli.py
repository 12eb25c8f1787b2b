"""`rag-server eval QUESTIONS.jsonl [MORE.jsonl ...] --target HOST:PORT [--baseline] [--json OUT]`.

Drives the running service over gRPC, one report per question file (e.g. the dev split and the frozen
holdout: `rag-server eval eval/dev_questions.jsonl eval/holdout_questions.jsonl`); warns when a file's gold
drugs are not in the served corpus (ListDrugs), since those questions cannot be answered there.
`--baseline` also runs the dense-only baseline in-process against the same data dir (a snapshot of it when
a running server holds the embedded store's lock).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from rag_server.client_channel import add_tls_arguments
from rag_server.config import Settings
from rag_server.evaluation.baseline import dense_baseline
from rag_server.evaluation.dataset import DatasetError, Question, load_questions
from rag_server.evaluation.metrics import EvalReport, summarize
from rag_server.evaluation.report import print_report, report_json
from rag_server.evaluation.runner import run_eval
from rag_server.store.base import Store


def add_eval_parser(sub: Any) -> None:
    """Register the `eval` sub-command on an argparse sub-parsers object."""
    p = sub.add_parser("eval", help="evaluate retrieval of a running service on a question set")
    p.add_argument("questions", nargs="+",
                   help="JSONL question file(s) (eval/dev_questions.jsonl, eval/holdout_questions.jsonl)")
    p.add_argument("--target", default=None,
                   help="HOST:PORT of the running service (default RAG_HOST:RAG_PORT)")
    p.add_argument("--baseline", action="store_true",
                   help="also run the dense-only baseline in-process on the data dir's store")
    p.add_argument("--data-dir", default=None, help="data directory for --baseline (default RAG_DATA_DIR)")
    p.add_argument("--json", dest="json_out", default=None, help="write figures and outcomes to this file")
    p.add_argument("--misses", type=int, default=20, help="misses to print (default 20)")
    p.add_argument("--concurrency", type=int, default=4, help="questions in flight (default 4)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per RPC (default 60)")
    p.add_argument("--no-warmup", action="store_true",
                   help="score the very first calls too (by default a few unscored calls warm the service)")
    p.add_argument("--answers", action="store_true",
                   help="also ask every question through AnswerService/Ask and score the answers")
    p.add_argument("--fail-under", type=float, default=None,
                   help="exit 1 when the service's section hit@1 (of any file) is below this value")
    add_tls_arguments(p)  # --tls-ca, --tls-cert, --tls-key (mutual TLS)
    p.set_defaults(func=cmd_eval)


@contextlib.contextmanager
def baseline_store(settings: Settings) -> Iterator[Store]:
    """The data dir's store for reading. A running server owns the embedded store's lock, so the
    served generation is then read from a temporary copy (generations are immutable once switched)."""
    from rag_server.store.common import StoreError
    from rag_server.store.factory import open_store

    try:
        store = open_store(settings)
    except StoreError:
        if settings.store != "edge":
            raise
        with tempfile.TemporaryDirectory(prefix="rag-eval-") as tmp:
            copy = Settings(**{**settings.model_dump(), "data_dir": Path(tmp)})
            _snapshot_edge_store(settings.store_dir, copy.store_dir)
            store = open_store(copy)
            try:
                yield store
            finally:
                store.close()
        return
    try:
        yield store
    finally:
        store.close()


def _snapshot_edge_store(src: Path, dst: Path) -> None:
    pointer = src / "ACTIVE.json"
    if not pointer.exists():
        raise DatasetError(f"{src} serves no corpus: nothing to run the baseline on")
    generation = str(json.loads(pointer.read_text(encoding="utf-8"))["generation"])
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src / "generations" / generation, dst / "generations" / generation)
    shutil.copy2(pointer, dst / "ACTIVE.json")


def run_baseline(questions: list[Question], settings: Settings) -> EvalReport:
    from rag_server.providers.factory import build_embedder

    embedder = build_embedder(settings)
    with baseline_store(settings) as store:
        return summarize(dense_baseline(questions, store, embedder))


def wide_console() -> Console:
    """A terminal-width console, or 140 columns when the output is a file or a pipe (CI logs)."""
    return Console() if sys.stdout.isatty() else Console(width=140)


def gold_drugs(questions: list[Question]) -> set[str]:
    return {d for q in questions for d in (q.gold_drug_id, *q.gold_drug_ids, *q.drug_ids) if d}


async def served_drugs(target: str, timeout_s: float = 10.0) -> set[str] | None:
    """The drug ids the running service serves (None when it serves no corpus or cannot be asked)."""
    import grpc

    from rag_server.client_channel import open_channel
    from rag_server.gen.rag.v1 import retrieval_pb2, retrieval_pb2_grpc

    try:
        async with open_channel(target) as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            reply = await stub.ListDrugs(retrieval_pb2.ListDrugsRequest(), timeout=timeout_s)
    except grpc.aio.AioRpcError:
        return None
    return {d.drug_id for d in reply.drugs}


def cmd_eval(args: argparse.Namespace) -> int:
    console = wide_console()
    overrides: dict[str, Any] = {}
    if args.data_dir:
        overrides["data_dir"] = Path(args.data_dir)
    settings = Settings(**overrides)
    target = args.target or f"{settings.host}:{settings.port}"
    from rag_server.evaluation.claims import ItemError, is_item_file, load_items
    from rag_server.vocabulary import load_vocabulary

    sets: list[tuple[str, list[Question]]] = []
    item_sets: list[tuple[str, Any]] = []
    for path in args.questions:
        try:
            if is_item_file(path):
                item_sets.append((str(path), load_items(path)))
            else:
                sets.append((str(path), load_questions(path, load_vocabulary().keys)))
        except (OSError, DatasetError, ItemError) as exc:
            console.print(f"[red]cannot read questions:[/red] {exc}")
            return 2
    served = asyncio.run(served_drugs(target))
    data: dict[str, Any] = {"target": target, "splits": {}}
    status = 0
    for path, questions in sets:
        console.rule(f"{path}: {len(questions)} questions against {target}")
        missing = sorted(gold_drugs(questions) - served) if served is not None else []
        if served is None:
            console.print("[yellow]warning:[/yellow] the service lists no drugs (no corpus served?): "
                          "every question about a drug will miss")
        elif missing:
            shown = ", ".join(missing[:8]) + (" …" if len(missing) > 8 else "")
            console.print(f"[yellow]warning:[/yellow] {len(missing)} gold drug(s) of this question set are "
                          f"not in the served corpus ({shown}): their questions cannot be answered here; "
                          "ingest the formulary they were written for")
        try:
            outcomes = asyncio.run(
                run_eval(target, questions, args.concurrency, args.timeout, warmup=not args.no_warmup)
            )
        except ConnectionError as exc:
            console.print(f"[red]{exc}[/red]")
            return 2
        service = summarize(outcomes)
        baseline: EvalReport | None = None
        if args.baseline:
            console.print(f"dense-only baseline on {settings.data_dir} ({settings.embedder})")
            baseline = run_baseline(questions, settings)
        print_report(console, service, baseline, args.misses)
        split = report_json(service, baseline)
        split["missing_gold_drugs"] = missing
        split["outcomes"] = [
            {"id": o.question.id, "kind": o.question.kind, "got": o.got_label, "gold": o.gold_label,
             "route": o.route, "millis": round(o.millis, 2)}
            for o in outcomes
        ]
        if args.answers:
            from rag_server.evaluation.answers import run_answers, summarize_answers
            from rag_server.evaluation.report import answers_table

            answered = summarize_answers(
                asyncio.run(run_answers(target, questions, args.concurrency, args.timeout))
            )
            console.print(answers_table(answered))
            split["answers"] = answered.to_dict()
        data["splits"][path] = split
        if args.fail_under is not None and service.section_hit1.value < args.fail_under:
            value = service.section_hit1.value
            console.print(f"[red]{path}: section hit@1 {value:.3f} < {args.fail_under}[/red]")
            status = 1
    for path, items in item_sets:
        console.rule(f"{path}: {len(items)} answer items against {target}")
        from rag_server.evaluation.claims import run_items, score
        from rag_server.evaluation.report import claims_table

        try:
            seen = asyncio.run(run_items(target, items, args.concurrency, args.timeout))
        except ConnectionError as exc:
            console.print(f"[red]{exc}[/red]")
            return 2
        claims = score(seen)
        console.print(claims_table(claims))
        for qid, measure, detail in claims.misses[: args.misses]:
            console.print(f"  miss {qid} {measure}: {detail}")
        data["splits"][path] = {"claims": claims.to_dict()}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        console.print(f"wrote {args.json_out}")
    return status


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="rag-server")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args()
    sys.exit(ns.func(ns))
