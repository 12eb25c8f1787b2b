"""The offline reranker (the default): deterministic, nothing leaves the process.

score = LEXICAL_WEIGHT * bm25 / max(bm25) + (1 - LEXICAL_WEIGHT) * cosine rescaled over the candidates.
bm25 is Okapi BM25 over the candidate set itself, on underthesea-segmented, accent-folded terms
(`rag_server.text.bm25.analyze`); cosine is e5 (query vs passage) from the embedder, with an LRU cache
of passage vectors. Without an embedder the score is the lexical part alone. Ties keep incoming order.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence

from rag_server.providers.base import Embedder
from rag_server.text.bm25 import analyze

LEXICAL_WEIGHT = 0.5
K1 = 1.2
B = 0.75
CACHE_SIZE = 4096


class OfflineReranker:
    name = "offline"

    def __init__(self, embedder: Embedder | None = None, cache_size: int = CACHE_SIZE) -> None:
        self.embedder = embedder
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def rerank(self, query: str, texts: Sequence[str], top_k: int) -> list[tuple[int, float]]:
        if not texts or top_k <= 0:
            return []
        lexical = bm25_scores(query, texts)
        top = max(lexical)
        lex_norm = [s / top if top > 0 else 0.0 for s in lexical]
        if self.embedder is not None:
            cosine = self._cosines(query, texts)
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


def bm25_scores(query: str, texts: Sequence[str]) -> list[float]:
    """Okapi BM25 of each text for the query, IDF taken over the texts themselves."""
    q_terms = list(analyze(query)[0])
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
