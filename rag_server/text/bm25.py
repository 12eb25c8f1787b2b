"""The one text analyzer and BM25 of the service: sparse vectors stored at ingest (the term-frequency half;
Qdrant's `Modifier.IDF` adds the IDF), query terms, and BM25 over a candidate set (the offline reranker).

Analysis, shared by documents and queries:
  1. `underthesea.word_tokenize` segments the text into words; a compound word ("suy thận") becomes one
     term with its syllables joined by "_" ("suy_thận"). Segmentation depends on context, so every
     syllable of a compound is also a term of its own.
  2. Everything is lower-cased, and every term is also emitted accent-folded ("suy_than", "than"), so a
     question typed without diacritics still matches.

Term ids are the first 31 bits of blake2b(term) — deterministic across processes (never `hash()`).

Document values carry BM25 term-frequency saturation `tf*(k1+1) / (tf + k1*(1-b+b*dl/avgdl))`, with dl
the number of segmented words and avgdl a constant. Query values are 1 per distinct term: the score of
a document is then sum over matched terms of IDF(term) * saturation(term).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache

from rag_server.store.base import SparseVector
from rag_server.text.normalize import fold
from rag_server.text.words import segmented

K1 = 1.2
B = 0.75
AVGDL = 120.0  # words per chunk, the typical prose chunk of the 800-token ceiling

_EDGE = re.compile(r"^[^\w]+|[^\w]+$", re.UNICODE)
_HAS_ALNUM = re.compile(r"[^\W_]", re.UNICODE)


def term_id(term: str) -> int:
    """Stable 31-bit id of a term."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def _clean_syllable(raw: str) -> str:
    syllable = _EDGE.sub("", raw.lower())
    return syllable if _HAS_ALNUM.search(syllable) else ""


@lru_cache(maxsize=16384)
def segment(text: str) -> tuple[tuple[str, ...], ...]:
    """Words of `text`, each a tuple of lower-cased syllables (punctuation dropped)."""
    raw_words = segmented(text)  # the one segmentation, under its one lock (underthesea loads lazily)
    words: list[tuple[str, ...]] = []
    for raw in raw_words:
        syllables = tuple(s for s in (_clean_syllable(p) for p in raw.replace("_", " ").split()) if s)
        if syllables:
            words.append(syllables)
    return tuple(words)


def word_terms(syllables: tuple[str, ...]) -> list[str]:
    """The terms one segmented word contributes (each distinct form once)."""
    forms: list[str] = []
    if len(syllables) > 1:
        forms.append("_".join(syllables))
        forms.append("_".join(fold(s) for s in syllables))
    for syllable in syllables:
        forms.append(syllable)
        forms.append(fold(syllable))
    return list(dict.fromkeys(f for f in forms if f))


def analyze(text: str) -> tuple[Counter[str], int]:
    """(term frequencies, document length in words)."""
    words = segment(text)
    counts: Counter[str] = Counter()
    for word in words:
        counts.update(word_terms(word))
    return counts, len(words)


def _to_sparse(weights: dict[int, float]) -> SparseVector:
    indices = sorted(weights)
    return SparseVector(indices=indices, values=[weights[i] for i in indices])


def document_vector(text: str, avgdl: float = AVGDL, k1: float = K1, b: float = B) -> SparseVector:
    """BM25 TF-saturation values per term id (IDF is applied by the store)."""
    counts, dl = analyze(text)
    norm = k1 * (1.0 - b + b * dl / avgdl)
    weights: dict[int, float] = {}
    for term, tf in counts.items():
        tid = term_id(term)
        weights[tid] = weights.get(tid, 0.0) + tf * (k1 + 1.0) / (tf + norm)
    return _to_sparse(weights)


def query_vector(text: str) -> SparseVector:
    """Weight 1 per distinct query term."""
    counts, _ = analyze(text)
    return _to_sparse({term_id(term): 1.0 for term in counts})


def query_terms(text: str, stopwords: frozenset[str] = frozenset(), accent_aware: bool = False) -> list[str]:
    """Distinct terms of a query, in order, stopword words (folded) left out. With `accent_aware`, a query
    typed with diacritics keeps them (its "phù" must not match the "phụ" of "phụ nữ" through the shared
    folding "phu"); a query typed without any matches the folded forms."""
    words = [w for w in segment(text) if "_".join(fold(s) for s in w) not in stopwords]
    accented = accent_aware and any(fold(s) != s for word in words for s in word)
    terms: list[str] = []
    for word in words:
        forms = ([*(["_".join(word)] if len(word) > 1 else []), *word]) if accented else word_terms(word)
        terms.extend(f for f in forms if f not in terms)
    return terms


def term_weights(text: str) -> dict[int, float]:
    """term id -> BM25 TF-saturation weight (what document_vector stores), for a text not stored."""
    vector = document_vector(text)
    return dict(zip(vector.indices, vector.values, strict=True))


def bm25_over(query_ids: Sequence[int], docs: Sequence[Mapping[int, float]]) -> list[float]:
    """BM25 of each document for the query terms, IDF taken over `docs` themselves, from the documents'
    stored TF-saturation weights (no text is analysed again)."""
    n = len(docs)
    wanted = list(dict.fromkeys(query_ids))
    df = {t: sum(1 for d in docs if t in d) for t in wanted}
    idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    return [sum(idf[t] * d[t] for t in wanted if t in d) for d in docs]
