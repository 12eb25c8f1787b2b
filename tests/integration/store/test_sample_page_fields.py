"""The FICTIONAL sample PDF built into chunks and loaded into both store adapters: a section read with its
images gives back the table's cells and PNG and every line's page box; searches and plain scrolls carry
neither image nor boxes. NOT medical information."""

from __future__ import annotations

from collections.abc import Iterator

import pymupdf
import pytest
from fictional_chunks import fake_dense
from qdrant_client import QdrantClient

from ingest.build import BuildResult, build_chunks
from ingest.load import load_generation, make_manifest, sparse_vectors
from rag_server.domain import ChunkKind, boxes_for, table_view
from rag_server.startup import sample_pdf
from rag_server.store.base import ChunkFilter, Store
from rag_server.store.client import QdrantStore
from rag_server.store.edge import EdgeStore
from rag_server.text.bm25 import query_vector

pytestmark = pytest.mark.integration

DIMS = 8
SECTION = ChunkFilter(drug_id="travoxan", section_keys=("lieu_luong_va_cach_dung",))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return build_chunks(sample_pdf(tmp_path_factory.mktemp("sample")), workers=1)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, built: BuildResult) -> Iterator[list[Store]]:
    chunks = built.chunks
    edge = EdgeStore(tmp_path_factory.mktemp("edge"))
    client = QdrantStore(QdrantClient(location=":memory:"), "formulary", local=True)
    for store in (edge, client):
        load_generation(
            store, chunks, [fake_dense(c.chunk_id, DIMS) for c in chunks], sparse_vectors(chunks), dims=DIMS,
            batch_size=64,
            manifest_for=lambda generation: make_manifest(
                chunks, generation=generation, embedding_model="fake/8", dims=DIMS,
                document_id=built.document_id, monograph_count=built.monograph_count,
                section_count=built.section_count),
        )
    yield [edge, client]
    edge.close()
    client.close()


def test_a_section_read_with_its_images_is_what_was_built(stores: list[Store], built: BuildResult) -> None:
    want = {c.chunk_id: c for c in built.chunks if (c.drug_id, c.section_key) == ("travoxan",
                                                                                    "lieu_luong_va_cach_dung")}
    for store in stores:
        got = {c.chunk_id: c for c in store.scroll(
            ChunkFilter(drug_id="travoxan", section_keys=("lieu_luong_va_cach_dung",), with_images=True,
                        with_boxes=True))}
        assert got == want
        [block] = [c for c in got.values() if c.chunk_kind is ChunkKind.BLOCK]
        view = table_view(block)
        assert view is not None and view.rows[0] == ("Clcr (ml/phút)", "Liều uống")
        image = pymupdf.Pixmap(view.image_png)
        assert image.width > 300 and image.height > 100
        [prose] = [c for c in got.values() if c.chunk_kind is ChunkKind.PROSE]
        start = prose.text.index("500 mg mỗi 12 giờ")
        [box] = boxes_for(prose, start, start + len("500 mg mỗi 12 giờ"))
        assert box.physical_page == block.source_refs[0].physical_page and box.printed_page > 0


def test_searches_and_plain_scrolls_leave_the_images_and_boxes_in_the_store(stores: list[Store]) -> None:
    for store in stores:
        plain = store.scroll(SECTION)
        assert plain and all(not c.table_png and not c.boxes for c in plain)
        assert any(c.table_rows for c in plain) and any(c.visual_spans for c in plain)
        query = query_vector("liều uống clcr thẩm phân")
        hits = store.search_sparse(query, ChunkFilter(drug_id="travoxan"), 10)
        assert any(h.chunk.chunk_kind is ChunkKind.BLOCK for h in hits)
        assert all(not h.chunk.table_png and not h.chunk.boxes for h in hits)
        everything = store.scroll(ChunkFilter())
        assert everything and not any(c.table_png for c in everything)


def test_boxes_of_cited_chunks_are_read_by_id(stores: list[Store], built: BuildResult) -> None:
    cited = tuple(c.chunk_id for c in built.chunks if c.drug_id == "zelvorin")[:3]
    for store in stores:
        got = store.scroll(ChunkFilter(chunk_ids=cited, with_boxes=True))
        assert sorted(c.chunk_id for c in got) == sorted(cited)
        assert all(c.boxes and not c.table_png for c in got)



def test_searched_evidence_gains_the_boxes_of_its_lines_before_it_is_cited(stores: list[Store]) -> None:
    from rag_server.answer.evidence import located
    from rag_server.retrieval.corpus import Corpus
    from rag_server.retrieval.policy import EvidencePolicy
    from rag_server.vocabulary.language import load_language

    for store in stores:
        corpus = Corpus.build(store, load_language(), EvidencePolicy.defaults())
        hits = store.search_sparse(query_vector("liều uống clcr"), ChunkFilter(drug_id="travoxan"), 10)
        prose = [h for h in hits if h.chunk.chunk_kind is ChunkKind.PROSE]
        assert prose and all(not h.chunk.boxes for h in prose)
        boxed = located(hits, corpus)
        assert [h.chunk.chunk_id for h in boxed] == [h.chunk.chunk_id for h in hits]  # order and scores kept
        assert [h.score for h in boxed] == [h.score for h in hits]
        for hit in boxed:
            if hit.chunk.chunk_kind is ChunkKind.PROSE:
                assert hit.chunk.boxes and not hit.chunk.table_png
                [first, *_] = boxes_for(hit.chunk, 0, 5)
                assert first.physical_page > 0
