"""Hybrid candidates, the guarded rerank and packing: free-form (one drug) and corpus search.

The reranker only orders; whatever happens to it (disabled, failing, timing out, breaker open), the
top_k cut and the token budget still apply to the fallback (hybrid) order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag_server.domain import Hit, ScoreKind
from rag_server.providers.base import RerankDoc
from rag_server.providers.rerank.breaker import BreakerState
from rag_server.providers.rerank.guarded import Ranker
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.packing import pack_evidence
from rag_server.retrieval.timing import Timings
from rag_server.retrieval.vectors import query_vector
from rag_server.store.base import ChunkFilter
from rag_server.text.bm25 import query_vector as sparse_query


@dataclass
class Candidates:
    hits: list[Hit]
    vector: list[float] | None  # the dense query vector (None without an embedder)


def search_candidates(
    query: str, dense_text: str, corpus: Corpus, providers: Providers, flt: ChunkFilter, limit: int,
    timings: Timings,
) -> Candidates:
    """Hybrid (sparse + dense, RRF) when an embedder is configured, else BM25 alone. `dense_text` is what the
    dense query embeds (a bounded head of the question that keeps its asked terms)."""
    sparse = sparse_query(query)
    if providers.embedder is None:
        with timings.stage("search"):
            return Candidates(corpus.store.search_sparse(sparse, flt, limit), None)
    with timings.stage("embed"):
        dense = query_vector(corpus, providers, dense_text)
    assert dense is not None
    with timings.stage("search"):
        return Candidates(corpus.store.search_hybrid(dense, sparse, flt, limit), dense)


def dense_scores(providers: Providers, candidates: Candidates, timings: Timings) -> list[float] | None:
    """Cosine of each candidate with the query, for a reranker that blends them (`uses_dense_scores`): the
    dot product of the unit query vector with the candidate's stored (unit) vector, which the search
    returned with it; a candidate without one gets the lowest cosine of the others (it ranks below them)."""
    if candidates.vector is None or not candidates.hits or not uses_dense_scores(providers.reranker):
        return None
    with timings.stage("dense_scores"):
        query = np.asarray(candidates.vector, dtype=np.float64)
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return None
        query /= norm
        found = [
            float(np.dot(query, np.asarray(h.chunk.dense, dtype=np.float64)))
            if h.chunk.dense is not None and len(h.chunk.dense) == len(query) else None
            for h in candidates.hits
        ]
    floor = min((s for s in found if s is not None), default=0.0)
    return [floor if s is None else s for s in found]


def uses_dense_scores(reranker: Ranker | None) -> bool:
    return reranker is not None and reranker.uses_dense_scores


@dataclass
class Ranked:
    kept: list[Hit] = field(default_factory=list)
    omitted_ids: list[str] = field(default_factory=list)
    reranker_state: BreakerState = BreakerState.DISABLED
    reranked: bool = False


def reranker_state(reranker: Ranker | None) -> BreakerState:
    return BreakerState.DISABLED if reranker is None else reranker.state


def rerank_hits(
    query: str,
    hits: Sequence[Hit],
    reranker: Ranker | None,
    top_k: int,
    timings: Timings,
    dense: Sequence[float] | None = None,
    prior: Mapping[str, float] | None = None,
) -> tuple[list[Hit], BreakerState, bool]:
    """(top_k hits best first, breaker state, whether the reranker's order was used).

    `prior` (section_key or chunk_id -> bonus, see freeform.py) reorders the reranker's scores before the
    top_k cut; it is ignored when the reranker's order is not used."""
    if reranker is None or not hits:
        return list(hits[:top_k]), reranker_state(reranker), False
    docs = [
        RerankDoc(h.chunk.text, dense[i] if dense is not None else None, h.chunk.terms)
        for i, h in enumerate(hits)
    ]
    asked = len(hits) if prior else top_k  # with a prior, score every candidate before cutting
    with timings.stage("rerank"):
        outcome = reranker.rerank_guarded(query, docs, asked)
    order, state, applied = outcome.order, outcome.state, outcome.applied
    if prior and applied and all(score is not None for _, score in order):
        indices = [i for i, _ in order]
        scored = order_with_prior([hits[i] for i in indices], [s or 0.0 for _, s in order], prior)
        order = [(indices[j], score) for j, score in scored]
    out: list[Hit] = []
    for index, score in order[:top_k]:
        hit = hits[index]
        out.append(Hit(hit.chunk, score, ScoreKind.RERANK) if applied and score is not None else hit)
    return out, state, applied


def rerank_and_pack(
    query: str,
    hits: Sequence[Hit],
    reranker: Ranker | None,
    top_k: int,
    max_tokens: int,
    timings: Timings,
    dense: Sequence[float] | None = None,
    prior: Mapping[str, float] | None = None,
) -> Ranked:
    top, state, applied = rerank_hits(query, hits, reranker, top_k, timings, dense, prior)
    with timings.stage("pack"):
        packed = pack_evidence(top, max_tokens)
    return Ranked(packed.kept, packed.omitted_ids, state, applied)


def order_with_prior(
    hits: Sequence[Hit], scores: Sequence[float], prior: Mapping[str, float]
) -> list[tuple[int, float]]:
    """(index, reranker score) best first by score + prior (by section_key, plus any by chunk_id); ties keep
    the incoming order."""

    def bonus(hit: Hit) -> float:
        return prior.get(hit.chunk.section_key, 0.0) + prior.get(hit.chunk.chunk_id, 0.0)

    order = sorted(range(len(hits)), key=lambda i: (-(scores[i] + bonus(hits[i])), i))
    return [(i, scores[i]) for i in order]
