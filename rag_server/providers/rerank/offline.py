"""The offline reranker (the default): deterministic, nothing leaves the process.

score = lexical_weight * bm25 / max(bm25) + (1 - lexical_weight) * cosine rescaled over the candidates.
bm25 is BM25 over the candidate set itself (IDF over the candidates) on the term weights ingestion
already computed and the store returns with each search hit (text.bm25: one analyzer, one K1/B); a
candidate without them is analysed now. cosine is e5 (query vs passage): the routes pass the cosines the
store already computed from the stored passage vectors, so a rerank embeds and segments nothing; called
without them it embeds the passages (an LRU cache keeps repeats cheap). Without either the score is the
lexical part alone. Ties keep the incoming order.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence

from rag_server.providers.base import Embedder, RerankDoc
from rag_server.text.bm25 import bm25_over, query_terms, term_id, term_weights

CACHE_SIZE = 4096


class OfflineReranker:
    name = "offline"
    uses_dense_scores = True  # GuardedReranker passes the routes' stored-vector cosines through
    local = True  # BM25 + cosines over at most a few dozen candidates: no thread, no timeout needed

    def __init__(
        self,
        embedder: Embedder | None = None,
        cache_size: int = CACHE_SIZE,
        stopwords: frozenset[str] = frozenset(),
        lexical_weight: float = 0.5,
    ) -> None:
        """`stopwords`: folded function words that never count as matches ("có", "không", ...)."""
        self.embedder = embedder
        self.stopwords = stopwords
        self.lexical_weight = lexical_weight
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        if not docs or top_k <= 0:
            return []
        lexical = bm25_scores(query, docs, self.stopwords)
        top = max(lexical)
        lex_norm = [s / top if top > 0 else 0.0 for s in lexical]
        cosine: list[float] | None = None
        if all(d.dense is not None for d in docs):
            cosine = [float(d.dense) for d in docs if d.dense is not None]
        elif self.embedder is not None:
            cosine = self._cosines(query, [d.text for d in docs])
        if cosine is not None:
            lo, hi = min(cosine), max(cosine)
            cos_norm = [(c - lo) / (hi - lo) if hi > lo else 0.0 for c in cosine]
            w = self.lexical_weight
            scores = [w * lx + (1 - w) * cs for lx, cs in zip(lex_norm, cos_norm, strict=True)]
        else:
            scores = lex_norm
        order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
        return [(i, round(scores[i], 6)) for i in order[:top_k]]

    def _cosines(self, query: str, texts: Sequence[str]) -> list[float]:
        assert self.embedder is not None
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            first_text = {k: t for k, t in zip(keys, texts, strict=True)}
            vectors = self.embedder.embed([first_text[k] for k in missing], "document")
            with self._lock:
                for key, vector in zip(missing, vectors, strict=True):
                    self._cache[key] = vector
                    self._cache.move_to_end(key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        q = self.embedder.embed([query], "query")[0]
        with self._lock:
            docs = [self._cache.get(k) or [] for k in keys]
        return [_dot(q, d) for d in docs]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=False))


def bm25_scores(
    query: str, docs: Sequence[RerankDoc], stopwords: frozenset[str] = frozenset()
) -> list[float]:
    """BM25 of each candidate for the query (IDF over the candidates), from the term weights stored at
    ingest when the candidates carry them, else from their text analysed now (text.bm25, one analyzer)."""
    q_ids = [term_id(t) for t in query_terms(query, stopwords, accent_aware=True)]
    weights = [d.terms if d.terms is not None else term_weights(d.text) for d in docs]
    return bm25_over(q_ids, weights)
