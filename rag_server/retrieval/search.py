"""Hybrid candidates, the guarded rerank and packing: free-form (one drug) and corpus search.

The reranker only orders; whatever happens to it (disabled, failing, timing out, breaker open), the
top_k cut and the token budget still apply to the fallback (hybrid) order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rag_server.domain import Hit, ScoreKind
from rag_server.providers.base import Embedder, Reranker
from rag_server.providers.rerank.guarded import DISABLED, GuardedReranker
from rag_server.retrieval.freeform import order_with_prior
from rag_server.retrieval.packing import pack_evidence
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter, Store
from rag_server.text.bm25 import query_vector

DENSE_SCORE_DEPTH = 64


@dataclass
class Candidates:
    hits: list[Hit]
    vector: list[float] | None  # the dense query vector (None without an embedder)


def search_candidates(
    store: Store, embedder: Embedder | None, query: str, flt: ChunkFilter, limit: int, timings: Timings
) -> Candidates:
    """Hybrid (sparse + dense, RRF) when an embedder is configured, else BM25 alone."""
    sparse = query_vector(query)
    if embedder is None:
        with timings.stage("search"):
            return Candidates(store.search_sparse(sparse, flt, limit), None)
    with timings.stage("embed"):
        dense = embedder.embed([query], "query")[0]
    with timings.stage("search"):
        return Candidates(store.search_hybrid(dense, sparse, flt, limit), dense)


def dense_scores(
    store: Store, candidates: Candidates, flt: ChunkFilter, timings: Timings
) -> list[float] | None:
    """Cosine of each candidate from the stored vectors (one exact dense search with the same filter);
    a candidate outside that dense top list gets the lowest cosine seen (it ranks below all of them)."""
    if candidates.vector is None or not candidates.hits:
        return None
    with timings.stage("dense_scores"):
        found = store.search_dense(candidates.vector, flt, max(DENSE_SCORE_DEPTH, 4 * len(candidates.hits)))
    by_id = {h.chunk.chunk_id: h.score for h in found}
    floor = min(by_id.values(), default=0.0)
    return [by_id.get(h.chunk.chunk_id, floor) for h in candidates.hits]


@dataclass
class Ranked:
    kept: list[Hit] = field(default_factory=list)
    omitted_ids: list[str] = field(default_factory=list)
    reranker_state: str = DISABLED
    reranked: bool = False


def reranker_state(reranker: Reranker | None) -> str:
    if reranker is None:
        return DISABLED
    return reranker.state if isinstance(reranker, GuardedReranker) else "closed"


def rerank_hits(
    query: str,
    hits: Sequence[Hit],
    reranker: Reranker | None,
    top_k: int,
    timings: Timings,
    dense: Sequence[float] | None = None,
    prior: Mapping[str, float] | None = None,
) -> tuple[list[Hit], str, bool]:
    """(top_k hits best first, breaker state, whether the reranker's order was used).

    `prior` (section_key -> bonus, see freeform.py) reorders the reranker's scores before the top_k cut;
    it is ignored when the reranker's order is not used."""
    if reranker is None or not hits:
        return list(hits[:top_k]), reranker_state(reranker), False
    texts = [h.chunk.text for h in hits]
    asked = len(hits) if prior else top_k  # with a prior, score every candidate before cutting
    with timings.stage("rerank"):
        if isinstance(reranker, GuardedReranker):
            outcome = reranker.rerank_guarded(query, texts, asked, dense=dense)
            order, state, applied = outcome.order, outcome.state, outcome.applied
        else:  # an unguarded reranker (tests): failures still fall back
            try:
                order = [(i, s) for i, s in reranker.rerank(query, texts, asked)]
                state, applied = "closed", True
            except Exception:
                order, state, applied = [(i, None) for i in range(min(top_k, len(hits)))], "open", False
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
    reranker: Reranker | None,
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
