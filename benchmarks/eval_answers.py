"""Claim-level answer evaluation over BOTH formularies (prints figures; never a timed test).

    .venv/bin/python benchmarks/eval_answers.py [ITEMS.jsonl ...] [--json OUT] [--misses N]
        [--sample-target HOST:PORT --real-target HOST:PORT]   (servers already running, e.g. an older build)

Serves the fictional sample formulary and the real monographs (../shared/corpus, copyrighted: rendered to a
tmp dir only) on two 127.0.0.1 servers, and asks each answer item (eval/answers/SCHEMA.md) of the files given
(default: the dev splits, then the frozen holdouts) on the server of its corpus ("none": the real one).
Section question files (eval/*.jsonl, `kind: section`, follow-ups included) are scored for section hit@1
on the real server, their sample items on the sample server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the test-only fixtures (formulary_fixtures/) live at the root
    sys.path.insert(0, str(REPO))
ANSWERS = REPO / "eval" / "answers"
DEFAULT_SETS = (
    ANSWERS / "safety_dev.jsonl",
    ANSWERS / "answers_dev.jsonl",
    REPO / "eval" / "colloquial_dev.jsonl",
    ANSWERS / "safety_holdout.jsonl",
    ANSWERS / "answers_holdout.jsonl",
    REPO / "eval" / "colloquial_holdout.jsonl",
)
SAMPLE_DRUGS = frozenset(
    {
        "zelvorin",
        "acid-pelmironic",
        "travoxan",
        "novadiamin",
        "keptralon",
        "mirvetan",
        "lumiprazol",
        "orbifexin",
    }
)


def embedding_cache_dir() -> Path:
    default = Path.home() / ".cache" / "formulary-rag" / "test-embeddings"
    return Path(os.environ.get("RAG_TEST_EMBED_CACHE") or default)


@asynccontextmanager
async def serving(tmp: Path, name: str, pdf: Path) -> AsyncIterator[str]:
    from ingest.pipeline import run_ingest
    from rag_server.app import App
    from rag_server.config import Settings
    from rag_server.providers.factory import build_embedder
    from rag_server.server import start_server
    from rag_server.store.factory import open_store

    settings = Settings(
        data_dir=tmp / name,
        host="127.0.0.1",
        port=0,  # type: ignore[call-arg]
        load_sample_on_start=False,
        audit=False,
    )
    settings.data_dir.mkdir(parents=True)
    cache = embedding_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    settings.cache_dir.symlink_to(cache, target_is_directory=True)
    store = await asyncio.to_thread(open_store, settings)
    app = App(settings, store=store, embedder=build_embedder(settings))
    await asyncio.to_thread(run_ingest, pdf, settings, store=store, embedder=app.embedder)
    running = await start_server(settings, app)
    try:
        yield f"127.0.0.1:{running.port}"
    finally:
        await running.stop(0)


@asynccontextmanager
async def given(target: str) -> AsyncIterator[str]:
    yield target


async def run(
    paths: list[Path], misses: int, json_out: str | None, sample_target: str = "", real_target: str = "",
    show_holdout: bool = False,
) -> int:
    from rich.console import Console

    from formulary_fixtures.real_corpus import read_corpus, render_corpus
    from rag_server.evaluation.claims import is_item_file, load_items, run_items, score
    from rag_server.evaluation.dataset import load_questions
    from rag_server.evaluation.metrics import summarize
    from rag_server.evaluation.report import claims_table, print_report, report_json
    from rag_server.evaluation.runner import run_eval
    from rag_server.startup import SAMPLE_PDF
    from rag_server.vocabulary import load_vocabulary

    corpus = REPO.parent / "shared" / "corpus"
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 2
    console = Console(width=170)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rag-eval-answers-") as tmp_name:
        tmp = Path(tmp_name)
        real_pdf = tmp / "real-corpus.pdf"
        if not real_target:
            real_pdf.write_bytes(render_corpus(read_corpus(corpus)).pdf)
        sample_server = given(sample_target) if sample_target else serving(tmp, "sample", SAMPLE_PDF)
        real_server = given(real_target) if real_target else serving(tmp, "real", real_pdf)
        async with sample_server as sample, real_server as real:
            for path in paths:
                # a frozen holdout's misses stay unread unless asked for (reading them is tuning on them)
                frozen = "holdout" in path.name or "heldout" in path.name
                shown = misses if show_holdout or not frozen else 0
                if is_item_file(path):
                    items = load_items(path)
                    on_sample = [i for i in items if i.corpus == "sample" or i.drug_id in SAMPLE_DRUGS]
                    on_real = [i for i in items if i not in on_sample]
                    seen = [*await run_items(sample, on_sample), *await run_items(real, on_real)]
                    claims = score(seen)
                    console.rule(f"{path.name}: {len(items)} items")
                    console.print(claims_table(claims))
                    for qid, measure, detail in claims.misses[:shown]:
                        console.print(f"  miss {qid} {measure}: {detail}")
                    report[path.name] = claims.to_dict()
                    continue
                questions = load_questions(path, load_vocabulary().keys)
                on_sample_q = [q for q in questions if q.gold_drug_id in SAMPLE_DRUGS]
                on_real_q = [q for q in questions if q not in on_sample_q]
                outcomes = [*await run_eval(sample, on_sample_q), *await run_eval(real, on_real_q)]
                summary = summarize(outcomes)
                console.rule(f"{path.name}: {len(questions)} questions")
                print_report(console, summary, None, shown)
                report[path.name] = report_json(summary)
    if json_out:
        Path(json_out).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("questions", nargs="*", type=Path, default=list(DEFAULT_SETS))
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--misses", type=int, default=60, help="misses shown per dev file (holdouts: none)")
    parser.add_argument("--holdout-misses", action="store_true",
                        help="also show a frozen holdout's misses (reading them spoils it for tuning)")
    parser.add_argument("--sample-target", default="", help="a running server with the sample loaded")
    parser.add_argument("--real-target", default="", help="a running server with the real monographs")
    args = parser.parse_args()
    return asyncio.run(
        run(list(args.questions), args.misses, args.json_out, args.sample_target, args.real_target,
            args.holdout_misses)
    )


if __name__ == "__main__":
    sys.exit(main())
