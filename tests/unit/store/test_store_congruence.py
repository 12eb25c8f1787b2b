"""The two Store adapters — embedded qdrant-edge-py and qdrant-client (local mode standing in for a
server) — loaded with the same fictional chunks must answer scroll / count / sparse / dense / hybrid
queries with the same ids in the same order (scores equal within float32 tolerance).

Legitimate difference, documented: points with EXACTLY equal scores may be cut at a limit boundary
differently by the two engines; the fixture texts avoid such ties and the adapters order equal scores
by chunk_id.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fictional_chunks import fictional_chunks, point_data
from qdrant_client import QdrantClient

from rag_server.domain import Chunk, Manifest
from rag_server.store.base import ChunkFilter, Store
from rag_server.store.client import QdrantStore
from rag_server.store.edge import EdgeStore
from rag_server.text.bm25 import query_vector

DIMS = 16
LONG = 300  # one section with more parts than Qdrant's default page (256) and the test page size (64)
PAGE = 64


def manifest_for(generation: str, chunks: list[Chunk]) -> Manifest:
    return Manifest(
        corpus_sha="test",
        embedding_model="fake/16",
        dims=DIMS,
        monograph_count=3,
        section_count=0,
        chunk_count=len(chunks),
        block_count=0,
        created_at=datetime.now(UTC).isoformat(),
        generation=generation,
        document_id="f1c7f1c7f1c7f1c7",
    )


def load(store: Store, generation: str, chunks: list[Chunk], batch: int = 100) -> None:
    store.create_generation(generation, DIMS)
    points = point_data(chunks, DIMS)
    for i in range(0, len(points), batch):
        store.upsert(generation, points[i : i + batch])
    assert store.generation_count(generation) == len(chunks)
    store.switch(generation, manifest_for(generation, chunks))


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return fictional_chunks(long_section_parts=LONG)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, chunks: list[Chunk]) -> Iterator[tuple[Store, Store]]:
    edge = EdgeStore(tmp_path_factory.mktemp("edge"), page_size=PAGE)
    client = QdrantStore(QdrantClient(location=":memory:"), "formulary", local=True, page_size=PAGE)
    for store in (edge, client):
        load(store, "g1", chunks)
    yield edge, client
    edge.close()
    client.close()


def ids(items: list[Chunk]) -> list[str]:
    return [c.chunk_id for c in items]


FILTERS = [
    ChunkFilter(),
    ChunkFilter(drug_id="zentravir"),
    ChunkFilter(drug_id="zentravir", section_keys=("tac_dung_khong_mong_muon",)),
    ChunkFilter(drug_ids=("quofenol", "miraxolam"), section_keys=("than_trong", "chong_chi_dinh")),
    ChunkFilter(chunk_kind="block"),
    ChunkFilter(drug_id="no-such-drug"),
]


@pytest.mark.parametrize("flt", FILTERS, ids=str)
def test_scroll_and_count_agree_with_each_other_and_with_the_data(
    pair: tuple[Store, Store], chunks: list[Chunk], flt: ChunkFilter
) -> None:
    expected = {
        c.chunk_id
        for c in chunks
        if (flt.drug_id is None or c.drug_id == flt.drug_id)
        and (flt.drug_ids is None or c.drug_id in flt.drug_ids)
        and (flt.section_keys is None or c.section_key in flt.section_keys)
        and (flt.chunk_kind is None or c.chunk_kind.value == flt.chunk_kind)
    }
    edge, client = pair
    edge_rows, client_rows = edge.scroll(flt), client.scroll(flt)
    assert ids(edge_rows) == ids(client_rows)
    assert set(ids(edge_rows)) == expected and len(edge_rows) == len(expected)
    assert edge.count(flt) == client.count(flt) == len(expected)


def test_scroll_pages_through_a_section_longer_than_any_page(pair: tuple[Store, Store]) -> None:
    flt = ChunkFilter(drug_id="zentravir", section_keys=("tac_dung_khong_mong_muon",))
    for store in pair:
        rows = store.scroll(flt)
        assert sorted(c.part_index for c in rows) == list(range(LONG))  # complete: > 256 and > page size
        assert all(c.text and c.source_refs for c in rows)


def test_scroll_with_default_page_size_is_complete(tmp_path: Path, chunks: list[Chunk]) -> None:
    store = EdgeStore(tmp_path / "edge")  # page 256 < 300 parts
    try:
        load(store, "g1", chunks)
        flt = ChunkFilter(section_keys=("tac_dung_khong_mong_muon",))
        assert len(store.scroll(flt)) == LONG
    finally:
        store.close()


QUERIES = [
    ("người bệnh suy thận", ChunkFilter()),
    ("nguoi benh suy than", ChunkFilter()),  # typed without diacritics
    ("chảy máu thuốc chống đông", ChunkFilter(drug_ids=("zentravir", "quofenol"))),
    ("thận trọng loét dạ dày", ChunkFilter(drug_id="miraxolam")),
    ("ngứa nhẹ thoáng qua", ChunkFilter(section_keys=("tac_dung_khong_mong_muon",))),
]


def assert_no_ties(store: Store, text: str, flt: ChunkFilter) -> None:
    """Precondition of an exact-order comparison: no two candidates of the prefetch depth tie."""
    scores = [round(h.score, 6) for h in store.search_sparse(query_vector(text), flt, 50)]
    assert len(scores) == len(set(scores)), f"fixture has tied BM25 scores for {text!r}: fix the texts"


@pytest.mark.parametrize(("text", "flt"), QUERIES, ids=[q for q, _ in QUERIES])
def test_sparse_search_same_ids_same_order(pair: tuple[Store, Store], text: str, flt: ChunkFilter) -> None:
    edge, client = pair
    assert_no_ties(edge, text, flt)
    a, b = edge.search_sparse(query_vector(text), flt, 10), client.search_sparse(query_vector(text), flt, 10)
    assert a, "the query must match something"
    assert [h.chunk.chunk_id for h in a] == [h.chunk.chunk_id for h in b]
    assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-4)
    assert all(h.score_kind.value == "lexical" for h in a + b)
    assert [h.score for h in a] == sorted((h.score for h in a), reverse=True)


def test_sparse_search_ranks_the_matching_section_first(pair: tuple[Store, Store]) -> None:
    for store in pair:
        hits = store.search_sparse(
            query_vector("chảy máu thuốc chống đông"), ChunkFilter(drug_id="quofenol"), 3
        )
        assert hits[0].chunk.chunk_id == "quofenol__tuong_tac_thuoc__0"


@pytest.mark.parametrize("key", ["q1", "q2", "q3"])
def test_dense_search_same_ids_same_order(pair: tuple[Store, Store], key: str) -> None:
    from fictional_chunks import fake_dense

    edge, client = pair
    vector = fake_dense(key, DIMS)
    for flt in (ChunkFilter(), ChunkFilter(drug_id="miraxolam")):
        a, b = edge.search_dense(vector, flt, 12), client.search_dense(vector, flt, 12)
        assert len(a) == min(12, edge.count(flt))
        assert [h.chunk.chunk_id for h in a] == [h.chunk.chunk_id for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
        assert all(h.score_kind.value == "dense" for h in a)


def test_dense_search_finds_the_point_itself(pair: tuple[Store, Store]) -> None:
    from fictional_chunks import fake_dense

    for store in pair:
        hits = store.search_dense(fake_dense("quofenol__than_trong__1", DIMS), ChunkFilter(), 1)
        assert hits[0].chunk.chunk_id == "quofenol__than_trong__1"
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(("text", "flt"), QUERIES, ids=[q for q, _ in QUERIES])
def test_hybrid_search_same_ids_same_order(pair: tuple[Store, Store], text: str, flt: ChunkFilter) -> None:
    from fictional_chunks import fake_dense

    edge, client = pair
    assert_no_ties(edge, text, flt)
    dense, sparse = fake_dense(text, DIMS), query_vector(text)
    a, b = edge.search_hybrid(dense, sparse, flt, 8), client.search_hybrid(dense, sparse, flt, 8)
    assert a
    assert [h.chunk.chunk_id for h in a] == [h.chunk.chunk_id for h in b]
    assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-5)
    assert all(h.score_kind.value == "fused" for h in a)


def test_hybrid_fuses_both_lists(pair: tuple[Store, Store]) -> None:
    """The lexical winner and the dense winner both appear in the fused list, with RRF scores."""
    from fictional_chunks import fake_dense

    for store in pair:
        sparse = query_vector("chảy máu thuốc chống đông")
        dense = fake_dense("miraxolam__chi_dinh__1", DIMS)
        fused = [h.chunk.chunk_id for h in store.search_hybrid(dense, sparse, ChunkFilter(), 10)]
        lexical_top = store.search_sparse(sparse, ChunkFilter(), 1)[0].chunk.chunk_id
        assert lexical_top in fused and "miraxolam__chi_dinh__1" in fused
        top = store.search_hybrid(dense, sparse, ChunkFilter(), 1)[0]
        assert 0 < top.score <= 2 / 60  # RRF with k=60: at most 1/60 per list


def test_search_results_round_trip_the_payload(pair: tuple[Store, Store], chunks: list[Chunk]) -> None:
    by_id = {c.chunk_id: c for c in chunks}
    for store in pair:
        for hit in store.search_sparse(query_vector("bảng liều"), ChunkFilter(chunk_kind="block"), 5):
            assert hit.chunk == by_id[hit.chunk.chunk_id]
            assert hit.chunk.requires_visual_check


@pytest.mark.parametrize(("text", "flt"), QUERIES[:2], ids=[q for q, _ in QUERIES[:2]])
def test_searched_hits_carry_their_stored_unit_vector(pair: tuple[Store, Store], text: str,
                                                      flt: ChunkFilter) -> None:
    """The reranker's cosines come from the vectors the search returns with each candidate: on both
    backends each is the stored vector normalised, and its dot product with a stored point's own vector is
    the cosine a dense search reports for that point."""
    import math

    from fictional_chunks import fake_dense

    dense, sparse = fake_dense(text, DIMS), query_vector(text)
    for store in pair:
        hits = [*store.search_hybrid(dense, sparse, flt, 8), *store.search_sparse(sparse, flt, 8)]
        assert hits and all(h.chunk.dense is not None and len(h.chunk.dense) == DIMS for h in hits)
        for hit in hits:
            assert hit.chunk.dense is not None
            assert math.sqrt(sum(x * x for x in hit.chunk.dense)) == pytest.approx(1.0, abs=1e-5)
        top = store.search_dense(dense, flt, 1)[0]
        same = next((h for h in hits if h.chunk.chunk_id == top.chunk.chunk_id), None)
        if same is not None and same.chunk.dense is not None:
            norm = math.sqrt(sum(x * x for x in dense))
            cosine = sum(a * b for a, b in zip(same.chunk.dense, dense, strict=True)) / norm
            assert cosine == pytest.approx(top.score, abs=1e-5)
        assert all(h.chunk.dense is None for h in store.search_dense(dense, flt, 4))  # not asked for
    a, b = (store.search_hybrid(dense, sparse, flt, 8) for store in pair)
    for x, y in zip(a, b, strict=True):
        assert x.chunk.dense == pytest.approx(y.chunk.dense, abs=1e-6)
