"""run_ingest with several embedding batches in flight, on a real embedded store: the vectors land in the
store as with one batch at a time, progress and summary report the chunks/s of texts actually embedded,
the full-book estimate uses them, and a re-run served from the cache has no rate and no estimate.
FICTIONAL chunks; a stand-in for a hosted embedder (fixed vectors after a short wait)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fictional_chunks import build_from_chunks, fake_dense, fictional_chunks

from ingest.pipeline import run_ingest
from rag_server.config import Settings
from rag_server.providers.base import EmbedKind
from rag_server.store.base import ChunkFilter
from rag_server.store.edge import EdgeStore

pytestmark = pytest.mark.integration

CHUNKS = fictional_chunks()


class HostedStandIn:
    model, dims, concurrent_batches = "fake/hosted-8", 8, 4

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = self.most = self.calls = 0

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        with self.lock:
            self.in_flight += 1
            self.calls += 1
            self.most = max(self.most, self.in_flight)
        time.sleep(0.02)
        with self.lock:
            self.in_flight -= 1
        return [fake_dense(f"{kind}:{t}", self.dims) for t in texts]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeStore]:
    s = EdgeStore(tmp_path / "store")
    yield s
    s.close()


def test_batches_in_flight_reach_the_store_and_the_summary(tmp_path: Path, store: EdgeStore) -> None:
    pdf = tmp_path / "fictional.pdf"
    pdf.write_bytes(b"%PDF-1.7\n% fictional test document, not medical information\n")
    settings = Settings(data_dir=tmp_path / "data", embed_batch_size=4, embed_concurrency=3)  # type: ignore[call-arg]
    embedder = HostedStandIn()
    events: list[tuple[str, str]] = []
    first = run_ingest(pdf, settings, store=store, embedder=embedder, build=build_from_chunks(CHUNKS),
                       progress=lambda stage, done, total, message: events.append((stage, message)))
    assert first.switched and store.count(ChunkFilter()) == len(CHUNKS)
    assert embedder.most == 3 and first.embed_concurrency == 3
    assert first.embeddings_computed == len({c.text for c in CHUNKS}) and first.embed_rate
    assert any(stage == "embed" and "chunks/s" in message for stage, message in events)
    assert "chunks/s embedded" in first.message
    estimate = first.estimate
    assert estimate.available and estimate.monographs == 691 and estimate.embedding_model == "fake/hosted-8"
    assert estimate.chunks == round(len(CHUNKS) * 691 / first.monograph_count)
    assert estimate.embed_seconds == pytest.approx(estimate.chunks / first.embed_rate)

    again = run_ingest(pdf, settings, store=store, embedder=HostedStandIn(), build=build_from_chunks(CHUNKS))
    assert again.switched and again.embeddings_computed == 0 and again.embed_rate is None
    assert not again.estimate.available and "cache" in again.estimate.note


def test_the_embedders_choice_when_the_setting_is_0(tmp_path: Path, store: EdgeStore) -> None:
    pdf = tmp_path / "fictional.pdf"
    pdf.write_bytes(b"%PDF-1.7\n% fictional test document, not medical information\n")
    settings = Settings(data_dir=tmp_path / "data", embed_batch_size=2)  # type: ignore[call-arg]
    embedder = HostedStandIn()
    outcome = run_ingest(pdf, settings, store=store, embedder=embedder, build=build_from_chunks(CHUNKS),
                         embed_only=True)
    assert outcome.embed_concurrency == 4 and 1 < embedder.most <= 4 and not outcome.switched
