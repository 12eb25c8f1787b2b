"""The offline reranker (the default): deterministic, nothing leaves the process.

score = LEXICAL_WEIGHT * bm25 / max(bm25) + (1 - LEXICAL_WEIGHT) * cosine rescaled over the candidates.
bm25 is Okapi BM25 over the candidate set itself, on underthesea-segmented, accent-folded terms
(`rag_server.text.bm25.analyze`); cosine is e5 (query vs passage). The routes pass the cosines the store
already computed (`dense=`, from the stored passage vectors), so a rerank embeds nothing; called without
them it embeds the passages with the embedder (an LRU cache keeps repeats cheap; slow on long texts).
Without either the score is the lexical part alone. Ties keep the incoming order.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence

from rag_server.providers.base import Embedder
from rag_server.text.bm25 import analyze, segment, word_terms
from rag_server.text.normalize import fold

LEXICAL_WEIGHT = 0.5
K1 = 1.2
B = 0.75
CACHE_SIZE = 4096


class OfflineReranker:
    name = "offline"
    uses_dense_scores = True  # GuardedReranker passes the routes' stored-vector cosines through

    def __init__(
        self,
        embedder: Embedder | None = None,
        cache_size: int = CACHE_SIZE,
        stopwords: frozenset[str] = frozenset(),
    ) -> None:
        """`stopwords`: folded function words that never count as matches ("có", "không", ...)."""
        self.embedder = embedder
        self.stopwords = stopwords
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def rerank(
        self, query: str, texts: Sequence[str], top_k: int, dense: Sequence[float] | None = None
    ) -> list[tuple[int, float]]:
        if not texts or top_k <= 0:
            return []
        if dense is not None and len(dense) != len(texts):
            raise ValueError(f"{len(dense)} dense scores for {len(texts)} texts")
        lexical = bm25_scores(query, texts, self.stopwords)
        top = max(lexical)
        lex_norm = [s / top if top > 0 else 0.0 for s in lexical]
        cosine = list(dense) if dense is not None else None
        if cosine is None and self.embedder is not None:
            cosine = self._cosines(query, texts)
        if cosine is not None:
            lo, hi = min(cosine), max(cosine)
            cos_norm = [(c - lo) / (hi - lo) if hi > lo else 0.0 for c in cosine]
            scores = [
                LEXICAL_WEIGHT * lx + (1 - LEXICAL_WEIGHT) * cs
                for lx, cs in zip(lex_norm, cos_norm, strict=True)
            ]
        else:
            scores = lex_norm
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
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


def query_terms(query: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Distinct query terms. A query typed with diacritics keeps them (its "phù" must not match the
    "phụ" of "phụ nữ" through the shared folding "phu"); one typed without matches folded forms."""
    words = [w for w in segment(query) if "_".join(fold(s) for s in w) not in stopwords]
    accented = any(fold(s) != s for word in words for s in word)
    terms: list[str] = []
    for word in words:
        forms = ([*(["_".join(word)] if len(word) > 1 else []), *word]) if accented else word_terms(word)
        terms.extend(f for f in forms if f not in terms)
    return terms


def bm25_scores(query: str, texts: Sequence[str], stopwords: frozenset[str] = frozenset()) -> list[float]:
    """Okapi BM25 of each text for the query, IDF taken over the texts themselves."""
    q_terms = query_terms(query, stopwords)
    docs = [analyze(t) for t in texts]
    n = len(docs)
    avgdl = sum(dl for _, dl in docs) / n if n else 1.0
    df: Counter[str] = Counter()
    for counts, _ in docs:
        df.update(set(counts) & set(q_terms))
    scores: list[float] = []
    for counts, dl in docs:
        score = 0.0
        for term in q_terms:
            tf = counts.get(term, 0)
            if not tf:
                continue
            idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / max(avgdl, 1.0)))
        scores.append(score)
    return scores
