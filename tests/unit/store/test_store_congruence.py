"""The two Store adapters — embedded qdrant-edge-py and qdrant-client (local mode standing in for a
server) — loaded with the same fictional chunks must answer scroll / count / sparse / dense / hybrid
queries with the same ids in the same order (scores equal within float32 tolerance), and give back every
payload field: table cells, visual spans, and — only when asked — table images and page boxes.

Legitimate difference, documented: points with EXACTLY equal scores may be cut at a limit boundary
differently by the two engines; the fixture texts avoid such ties and the adapters order equal scores
by chunk_id.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fictional_chunks import fictional_chunks, point_data
from qdrant_client import QdrantClient

from rag_server.domain import Chunk, ChunkKind, Manifest, TextBox
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


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # any bytes (not UTF-8) come back as they went in


def with_page_fields(chunk: Chunk) -> Chunk:
    """The chunk with what ingestion adds: a box per line, a visual span, a table's cells and image."""
    page = chunk.source_refs[0].physical_page
    half = len(chunk.text) // 2
    boxes = [TextBox(0, half, page, 50.0, 100.2, 290.5, 112.9), TextBox(half + 1, len(chunk.text), page,
                                                                       50.0, 113.1, 180.4, 125.8)]
    if chunk.chunk_kind is ChunkKind.BLOCK:
        rows = [["Cân nặng", "Liều"], ["< 40 kg", "2,5 mg/kg"], [chunk.drug_name, ""]]
        return replace(chunk, table_rows=rows, table_png=PNG + chunk.drug_id.encode(), boxes=boxes[:1])
    spans = [(0, 5)] if chunk.part_index == 1 else []
    return replace(chunk, boxes=boxes, visual_spans=spans)


def light(chunk: Chunk) -> Chunk:
    """What a search or a plain scroll gives back: everything but the image and the boxes."""
    return replace(chunk, table_png=b"", boxes=[])


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return [with_page_fields(c) for c in fictional_chunks(long_section_parts=LONG)]


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
        hits = store.search_sparse(query_vector("bảng liều"), ChunkFilter(chunk_kind="block"), 5)
        assert hits
        for hit in hits:
            assert hit.chunk == light(by_id[hit.chunk.chunk_id])  # the cells, never the image
            assert hit.chunk.requires_visual_check and hit.chunk.table_rows
        flt = ChunkFilter(chunk_kind="block", with_images=True, with_boxes=True)
        for hit in store.search_sparse(query_vector("bảng liều"), flt, 5):
            assert hit.chunk == by_id[hit.chunk.chunk_id]  # asked for: the whole payload


@pytest.mark.parametrize("search", ["sparse", "dense", "hybrid"])
def test_searches_carry_no_image_and_no_boxes_unless_asked(pair: tuple[Store, Store], chunks: list[Chunk],
                                                           search: str) -> None:
    from fictional_chunks import fake_dense

    by_id = {c.chunk_id: c for c in chunks}
    text = "bảng liều cân nặng"
    dense, sparse = fake_dense(text, DIMS), query_vector(text)

    def run(store: Store, flt: ChunkFilter) -> list[Chunk]:
        if search == "sparse":
            return [h.chunk for h in store.search_sparse(sparse, flt, 20)]
        if search == "dense":
            return [h.chunk for h in store.search_dense(dense, flt, 20)]
        return [h.chunk for h in store.search_hybrid(dense, sparse, flt, 20)]

    for store in pair:
        plain = run(store, ChunkFilter())
        assert any(c.chunk_kind is ChunkKind.BLOCK for c in plain)
        assert all(not c.table_png and not c.boxes for c in plain)
        assert all(c.table_rows == by_id[c.chunk_id].table_rows for c in plain)
        assert all(c.visual_spans == by_id[c.chunk_id].visual_spans for c in plain)
        boxed = run(store, ChunkFilter(with_boxes=True))
        assert all(c.boxes == by_id[c.chunk_id].boxes and not c.table_png for c in boxed)
        full = run(store, ChunkFilter(with_images=True, with_boxes=True))
        assert all(_same(c, by_id[c.chunk_id]) for c in full)
        assert {c.chunk_id for c in full} == {c.chunk_id for c in plain}  # what is read, not what is found


def _same(got: Chunk, want: Chunk) -> bool:
    return replace(got, terms=None, dense=None) == want


@pytest.mark.parametrize("flt", FILTERS, ids=str)
def test_scrolls_give_back_every_field_images_and_boxes_only_when_asked(
    pair: tuple[Store, Store], chunks: list[Chunk], flt: ChunkFilter
) -> None:
    by_id = {c.chunk_id: c for c in chunks}
    for store in pair:
        assert all(c == light(by_id[c.chunk_id]) for c in store.scroll(flt))
        full = store.scroll(replace(flt, with_images=True, with_boxes=True))
        assert all(c == by_id[c.chunk_id] for c in full) and len(full) == store.count(flt)
        images = store.scroll(replace(flt, with_images=True))
        assert all(c == replace(by_id[c.chunk_id], boxes=[]) for c in images)
    blocks = [c for c in chunks if c.chunk_kind is ChunkKind.BLOCK]
    assert blocks and all(c.table_png.startswith(PNG) and c.table_rows for c in blocks)


def test_chunk_ids_select_the_chunks_asked_for(pair: tuple[Store, Store], chunks: list[Chunk]) -> None:
    wanted = ("quofenol__than_trong__1", "zentravir__lieu_luong_va_cach_dung__block__t1", "no-such-chunk")
    for store in pair:
        got = store.scroll(ChunkFilter(chunk_ids=wanted, with_boxes=True))
        assert sorted(c.chunk_id for c in got) == sorted(wanted[:2])
        assert all(c.boxes for c in got)
        assert store.count(ChunkFilter(chunk_ids=wanted)) == 2


def test_payloads_written_before_the_new_fields_still_load(tmp_path: Path, chunks: list[Chunk]) -> None:
    """A generation loaded by an older release (no visual_spans, table_rows, table_png, boxes keys) is
    read with those fields empty, on both adapters."""
    old = [_OldChunk(**{f: getattr(c, f) for f in Chunk.__dataclass_fields__}) for c in chunks[:12]]
    edge = EdgeStore(tmp_path / "edge", page_size=PAGE)
    client = QdrantStore(QdrantClient(location=":memory:"), "formulary", local=True, page_size=PAGE)
    try:
        for store in (edge, client):
            load(store, "g1", list(old))
            got = store.scroll(ChunkFilter(with_images=True, with_boxes=True))
            assert sorted(c.chunk_id for c in got) == sorted(c.chunk_id for c in old)
            for chunk in got:
                assert not chunk.visual_spans and not chunk.table_rows and not chunk.table_png
                assert not chunk.boxes and chunk.text and chunk.source_refs
    finally:
        edge.close()
        client.close()


class _OldChunk(Chunk):
    """A chunk whose payload is the one written before the page fields existed."""

    def to_payload(self) -> dict[str, Any]:
        payload = super().to_payload()
        for key in ("visual_spans", "table_rows", "table_png", "boxes"):
            del payload[key]
        return payload


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
