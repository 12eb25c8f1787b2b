"""Embedding cache: keyed by (model, kind, sha256(text)); an interrupted run resumes without recomputing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from fictional_chunks import fake_dense

from ingest.embed_cache import EmbeddingCache, embed_cached, text_sha
from rag_server.providers.base import EmbedKind


class CountingEmbedder:
    """A deterministic embedder that counts what it computes and can fail after N texts."""

    def __init__(self, model: str = "fake/8", dims: int = 8, fail_after: int | None = None) -> None:
        self.model, self.dims = model, dims
        self.computed: list[str] = []
        self.fail_after = fail_after

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        if self.fail_after is not None and len(self.computed) + len(texts) > self.fail_after:
            raise RuntimeError("interrupted")
        self.computed.extend(texts)
        return [fake_dense(f"{kind}:{t}", self.dims) for t in texts]


TEXTS = [f"Đoạn hư cấu số {i} (không phải thông tin y khoa)." for i in range(20)]


def test_interrupted_run_resumes_with_only_the_rest(tmp_path: Path) -> None:
    first = CountingEmbedder(fail_after=10)
    with pytest.raises(RuntimeError, match="interrupted"):
        embed_cached(first, tmp_path, TEXTS, batch_size=4)
    assert len(first.computed) == 8  # two batches of 4 made it to disk before the failure

    second = CountingEmbedder()
    vectors, stats = embed_cached(second, tmp_path, TEXTS, batch_size=4)
    assert second.computed == TEXTS[8:]
    assert (stats.computed, stats.cached) == (12, 8)
    assert vectors[0] == pytest.approx(fake_dense(f"document:{TEXTS[0]}", 8), abs=1e-7)

    third = CountingEmbedder()
    again, stats = embed_cached(third, tmp_path, TEXTS, batch_size=4)
    assert third.computed == [] and (stats.computed, stats.cached) == (0, 20)
    assert again == vectors  # float32 round trip: cached == freshly computed, bit for bit


def test_another_model_or_kind_misses(tmp_path: Path) -> None:
    embed_cached(CountingEmbedder(), tmp_path, TEXTS[:5])
    other_model = CountingEmbedder(model="fake/8-v2")
    embed_cached(other_model, tmp_path, TEXTS[:5])
    assert len(other_model.computed) == 5
    query_kind = CountingEmbedder()
    embed_cached(query_kind, tmp_path, TEXTS[:5], "query")
    assert len(query_kind.computed) == 5


def test_resume_false_recomputes(tmp_path: Path) -> None:
    embed_cached(CountingEmbedder(), tmp_path, TEXTS[:5])
    fresh = CountingEmbedder()
    _, stats = embed_cached(fresh, tmp_path, TEXTS[:5], resume=False)
    assert len(fresh.computed) == 5 and stats.cached == 0


def test_duplicates_are_embedded_once_and_order_is_kept(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    texts = ["x", "y", "x", "z", "y"]
    vectors, stats = embed_cached(embedder, tmp_path, texts, batch_size=2)
    assert embedder.computed == ["x", "y", "z"] and stats.computed == 3
    assert vectors[0] == vectors[2] and vectors[1] == vectors[4] and vectors[0] != vectors[1]


def test_torn_last_line_is_skipped_and_appending_continues(tmp_path: Path) -> None:
    embed_cached(CountingEmbedder(), tmp_path, TEXTS[:3])
    cache = EmbeddingCache(tmp_path, "fake/8", "document")
    with cache.path.open("a", encoding="utf-8") as handle:
        handle.write('{"model": "fake/8", "kind": "document", "sha": "abc", "di')  # crash mid-write
    embedder = CountingEmbedder()
    embed_cached(embedder, tmp_path, TEXTS[:4])
    assert embedder.computed == [TEXTS[3]]
    reloaded = EmbeddingCache(tmp_path, "fake/8", "document")
    assert reloaded.skipped_lines == 1 and len(reloaded) == 4
    assert reloaded.get(text_sha(TEXTS[3])) is not None


def test_progress_reports_per_batch(tmp_path: Path) -> None:
    events: list[tuple[int, int]] = []
    embed_cached(
        CountingEmbedder(), tmp_path, TEXTS[:10], batch_size=4, progress=lambda d, t: events.append((d, t))
    )
    assert events == [(0, 10), (4, 10), (8, 10), (10, 10)]
