"""BM25 vector cache: a re-run reuses vectors of unchanged texts; another analyzer version misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import sparse_cache
from ingest.sparse_cache import sparse_vectors_cached
from rag_server.text.bm25 import document_vector

TEXTS = [
    "Người bệnh suy thận nặng (hư cấu).",
    "Liều hư cấu 2,5 mg/kg/ngày.",
    "Người bệnh suy thận nặng (hư cấu).",
]


def test_cached_vectors_equal_fresh_ones_and_are_reused(tmp_path: Path) -> None:
    first, computed = sparse_vectors_cached(TEXTS, tmp_path)
    assert computed == 2  # the duplicate text is analysed once
    assert first == [document_vector(t) for t in TEXTS]
    again, computed = sparse_vectors_cached([*TEXTS, "Văn bản mới, hư cấu."], tmp_path)
    assert computed == 1 and again[:3] == first


def test_another_analyzer_version_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sparse_vectors_cached(TEXTS, tmp_path)
    monkeypatch.setattr(sparse_cache, "analyzer_version", lambda: "bm25-v2-test")
    _, computed = sparse_vectors_cached(TEXTS, tmp_path)
    assert computed == 2


def test_a_torn_line_is_ignored(tmp_path: Path) -> None:
    sparse_vectors_cached(TEXTS[:1], tmp_path)
    path = tmp_path / sparse_cache.analyzer_version() / "document.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"sha": "x", "i": [1, 2')
    vectors, computed = sparse_vectors_cached(TEXTS, tmp_path)
    assert computed == 1 and vectors == [document_vector(t) for t in TEXTS]
    _, computed = sparse_vectors_cached(TEXTS, tmp_path)
    assert computed == 0
