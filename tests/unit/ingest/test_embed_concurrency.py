"""Several embedding batches in flight (a hosted embedder waits on the network): vectors in text order, at
most `concurrency` requests at once, every batch cached as it comes back (a failure keeps the others), and
the rate counts only the texts actually embedded. Fictional texts, fake vectors."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fictional_chunks import fake_dense

from ingest.embed_cache import EmbeddingCache, embed_cached, text_sha
from rag_server.providers.base import EmbedKind

TEXTS = [f"Đoạn hư cấu số {i} (không phải thông tin y khoa)." for i in range(40)]


class SlowEmbedder:
    """Answers after a random short wait (the network), counting the calls in flight; can fail a batch."""

    model, dims = "fake/hosted", 8

    def __init__(self, fail_on: str | None = None) -> None:
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.computed: list[str] = []
        self.fail_on = fail_on
        self.random = random.Random(7)

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            wait = self.random.uniform(0.005, 0.03)
        try:
            time.sleep(wait)
            if self.fail_on is not None and self.fail_on in texts:
                raise RuntimeError("HTTP 429 (injected)")
            with self.lock:
                self.computed.extend(texts)
            return [fake_dense(f"{kind}:{t}", self.dims) for t in texts]
        finally:
            with self.lock:
                self.in_flight -= 1


def test_batches_in_flight_give_the_vectors_in_text_order(tmp_path: Path) -> None:
    texts = [*TEXTS, TEXTS[3], TEXTS[0]]  # repeated texts are embedded once
    embedder = SlowEmbedder()
    vectors, stats = embed_cached(embedder, tmp_path, texts, batch_size=3, concurrency=4)
    expected = [fake_dense(f"document:{t}", 8) for t in texts]
    assert vectors == [[float(x) for x in np.asarray(v, dtype="<f4")] for v in expected]  # float32 cache
    assert 1 < embedder.most_in_flight <= 4
    assert sorted(embedder.computed) == sorted(TEXTS) and stats.computed == len(TEXTS)
    assert stats.concurrency == 4 and stats.rate is not None and stats.rate > 0


def test_the_same_vectors_with_one_or_many_batches_in_flight(tmp_path: Path) -> None:
    one, _ = embed_cached(SlowEmbedder(), tmp_path / "one", TEXTS, batch_size=4, concurrency=1)
    many, _ = embed_cached(SlowEmbedder(), tmp_path / "many", TEXTS, batch_size=4, concurrency=5)
    assert one == many


def test_every_batch_back_is_cached_when_one_fails_and_a_rerun_embeds_only_the_rest(tmp_path: Path) -> None:
    failing = SlowEmbedder(fail_on=TEXTS[17])
    with pytest.raises(RuntimeError, match="429"):
        embed_cached(failing, tmp_path, TEXTS, batch_size=4, concurrency=3)
    cache = EmbeddingCache(tmp_path, "fake/hosted", "document")
    assert len(cache) == len(failing.computed) > 0 and TEXTS[17] not in failing.computed
    assert all(cache.get(text_sha(t)) is not None for t in failing.computed)
    rerun = SlowEmbedder()
    vectors, stats = embed_cached(rerun, tmp_path, TEXTS, batch_size=4, concurrency=3)
    assert sorted(rerun.computed) == sorted(set(TEXTS) - set(failing.computed))
    assert (stats.computed, stats.cached) == (len(rerun.computed), len(failing.computed))
    assert len(vectors) == len(TEXTS)


def test_nothing_embedded_means_no_rate(tmp_path: Path) -> None:
    embed_cached(SlowEmbedder(), tmp_path, TEXTS[:8], batch_size=4, concurrency=2)
    _, stats = embed_cached(SlowEmbedder(), tmp_path, TEXTS[:8], batch_size=4, concurrency=2)
    assert (stats.computed, stats.cached, stats.rate) == (0, 8, None)


def test_progress_counts_every_batch_as_it_comes_back(tmp_path: Path) -> None:
    events: list[tuple[int, int]] = []
    embed_cached(SlowEmbedder(), tmp_path, TEXTS[:10], batch_size=4, concurrency=3,
                 progress=lambda done, total: events.append((done, total)))
    assert events[0] == (0, 10) and events[-1] == (10, 10) and len(events) == 4
    assert [d for d, _ in events] == sorted(d for d, _ in events)
