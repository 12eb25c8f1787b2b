"""Pieces both store adapters share: generation ids, hit ordering, errors."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from rag_server.domain import Chunk, Hit, ScoreKind

SCROLL_PAGE_SIZE = 256
RRF_K = 60
HYBRID_PREFETCH_MIN = 50  # candidates each of sparse and dense contribute to the fusion


class StoreError(RuntimeError):
    """The store cannot do what was asked (unknown generation, data dir in use, ...)."""


def new_generation() -> str:
    """Sortable, unique generation id: `g20250101T120000123456Z-1a2b` (valid as a collection suffix)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"g{stamp}-{secrets.token_hex(2)}"


def prefetch_limit(limit: int) -> int:
    return max(limit * 4, HYBRID_PREFETCH_MIN)


def fetch_limit(limit: int) -> int:
    """Ask the engine for a few more than `limit`, so equal scores at the cut are broken by chunk_id
    (RRF gives equal scores to a rank-r lexical-only and a rank-r dense-only point)."""
    return limit + max(8, limit // 4)


def to_hits(
    rows: list[tuple[dict[str, Any], float, Any, Any]], kind: ScoreKind, limit: int
) -> list[Hit]:
    """The best `limit` hits, best first; equal scores are ordered by chunk_id so both adapters agree.
    A row's third and fourth items are its stored BM25 sparse vector (the chunk's terms) and dense vector
    when the search asked for them."""
    hits = []
    for payload, score, sparse, dense in rows:
        chunk = Chunk.from_payload(payload)
        if sparse is not None:
            chunk.terms = dict(zip(sparse.indices, sparse.values, strict=True))
        if dense is not None:
            chunk.dense = list(dense)
        hits.append(Hit(chunk=chunk, score=float(score), score_kind=kind))
    hits.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return hits[:limit]


def sparse_of(vector: Any, name: str) -> Any:
    """The named (sparse or dense) vector of a returned point (None when absent)."""
    if isinstance(vector, dict):
        return vector.get(name)
    return None
