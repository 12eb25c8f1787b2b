"""Generations: a load writes a new generation, switch() serves it atomically with its manifest, old
generations are dropped, a half-written one can be dropped without touching what is served, and a
reopen serves the last switched generation. Run against both adapters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fictional_chunks import fictional_chunks, point_data
from qdrant_client import QdrantClient
from test_store_congruence import DIMS, load, manifest_for

from rag_server.config import Settings
from rag_server.store.base import ChunkFilter, Store
from rag_server.store.client import QdrantStore
from rag_server.store.common import StoreError
from rag_server.store.edge import EdgeStore
from rag_server.store.factory import open_store

Opener = Callable[[], Store]


@pytest.fixture(params=["edge", "qdrant-local-path"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[Store] = []

    def open_() -> Store:
        if request.param == "edge":
            store: Store = EdgeStore(tmp_path / "store")
        else:
            store = QdrantStore(QdrantClient(path=str(tmp_path / "qdrant")), "formulary", local=True)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def test_empty_store_serves_nothing(opener: Opener) -> None:
    store = opener()
    assert store.manifest() is None
    assert store.scroll(ChunkFilter()) == []
    assert store.count(ChunkFilter()) == 0
    assert store.search_sparse(point_data(fictional_chunks()[:1], DIMS)[0].sparse, ChunkFilter(), 5) == []


def test_switch_serves_the_new_generation_and_drops_the_old(opener: Opener) -> None:
    store = opener()
    first = fictional_chunks()
    load(store, "g1", first)
    assert store.manifest() is not None and store.manifest().generation == "g1"  # type: ignore[union-attr]
    second = [c for c in first if c.drug_id != "miraxolam"]
    store.create_generation("g2", DIMS)
    store.upsert("g2", point_data(second, DIMS))
    # not switched yet: reads still see g1
    assert store.count(ChunkFilter()) == len(first)
    assert store.count(ChunkFilter(drug_id="miraxolam")) > 0
    store.switch("g2", manifest_for("g2", second))
    assert store.manifest().generation == "g2"  # type: ignore[union-attr]
    assert store.count(ChunkFilter()) == len(second)
    assert store.count(ChunkFilter(drug_id="miraxolam")) == 0
    with pytest.raises(Exception):  # noqa: B017 - g1 is gone (edge: unknown writer; client: no collection)
        store.generation_count("g1")


def test_dropping_a_half_written_generation_keeps_the_served_one(opener: Opener) -> None:
    store = opener()
    chunks = fictional_chunks()
    load(store, "g1", chunks)
    store.create_generation("g2", DIMS)
    store.upsert("g2", point_data(chunks[:3], DIMS))
    store.drop_generation("g2")
    assert store.manifest().generation == "g1"  # type: ignore[union-attr]
    assert store.count(ChunkFilter()) == len(chunks)
    with pytest.raises(StoreError):
        store.upsert("g2", point_data(chunks[:1], DIMS))


def test_the_served_generation_cannot_be_dropped(opener: Opener) -> None:
    store = opener()
    load(store, "g1", fictional_chunks())
    with pytest.raises(StoreError):
        store.drop_generation("g1")
    assert store.count(ChunkFilter()) > 0


def test_switch_refuses_a_manifest_of_another_generation(opener: Opener) -> None:
    store = opener()
    chunks = fictional_chunks()
    store.create_generation("g1", DIMS)
    store.upsert("g1", point_data(chunks, DIMS))
    with pytest.raises(StoreError):
        store.switch("g1", manifest_for("g0", chunks))
    assert store.manifest() is None


def test_reopen_serves_the_last_switched_generation_and_removes_orphans(opener: Opener) -> None:
    store = opener()
    chunks = fictional_chunks()
    load(store, "g1", chunks)
    load(store, "g2", chunks[:5])
    store.create_generation("g3", DIMS)  # a crashed load: never switched, never dropped
    store.upsert("g3", point_data(chunks[:2], DIMS))
    store.close()
    reopened = opener()
    manifest = reopened.manifest()
    assert manifest is not None and manifest.generation == "g2" and manifest.chunk_count == 5
    assert reopened.count(ChunkFilter()) == 5
    assert sorted(c.chunk_id for c in reopened.scroll(ChunkFilter())) == sorted(
        c.chunk_id for c in chunks[:5]
    )
    with pytest.raises(Exception):  # noqa: B017 - the orphan g3 was removed on open
        reopened.generation_count("g3")


def test_edge_store_is_owned_by_one_process_at_a_time(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "store")
    try:
        with pytest.raises(StoreError, match="another process"):
            EdgeStore(tmp_path / "store")
    finally:
        store.close()
    EdgeStore(tmp_path / "store").close()  # released on close


def test_edge_pointer_file_is_replaced_atomically(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "store")
    try:
        load(store, "g1", fictional_chunks())
        load(store, "g2", fictional_chunks()[:4])
        names = sorted(p.name for p in (tmp_path / "store").iterdir())
        assert "ACTIVE.json" in names and not any(n.endswith(".tmp") for n in names)
        assert sorted(p.name for p in (tmp_path / "store" / "generations").iterdir()) == ["g2"]
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["edge", "qdrant"])
def test_open_store_from_settings(tmp_path: Path, kind: str) -> None:
    settings = Settings(  # type: ignore[call-arg]
        data_dir=tmp_path, store=kind, qdrant_url=str(tmp_path / "q") if kind == "qdrant" else ""
    )
    store = open_store(settings)
    try:
        load(store, "g1", fictional_chunks())
    finally:
        store.close()
    with pytest.raises(StoreError, match="16-dimensional"):
        open_store(settings, dims=384)
    store = open_store(settings, dims=DIMS)
    try:
        assert store.manifest().generation == "g1"  # type: ignore[union-attr]
    finally:
        store.close()
