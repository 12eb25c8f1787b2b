"""Reads of an embedded Qdrant shard (qdrant-edge-py), shared by the store that owns the data dir (edge.py)
and the read-only follower of another process's store (follower.py). A subclass holds `_lock`, the served
shard `_active_shard`, its generation `_active`, its `_manifest` and `page_size`."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe

from rag_server.domain import Chunk, Hit, Manifest, ScoreKind
from rag_server.store.base import DENSE_VECTOR, SPARSE_VECTOR, ChunkFilter, SparseVector
from rag_server.store.common import RRF_K, fetch_limit, prefetch_limit, sparse_of, to_hits


def edge_filter(flt: ChunkFilter) -> qe.Filter | None:
    must: list[Any] = []
    if flt.drug_id is not None:
        must.append(qe.FieldCondition("drug_id", match=qe.MatchValue(flt.drug_id)))
    if flt.drug_ids is not None:
        must.append(qe.FieldCondition("drug_id", match=qe.MatchAny(list(flt.drug_ids))))
    if flt.section_keys is not None:
        must.append(qe.FieldCondition("section_key", match=qe.MatchAny(list(flt.section_keys))))
    if flt.chunk_kind is not None:
        must.append(qe.FieldCondition("chunk_kind", match=qe.MatchValue(flt.chunk_kind)))
    if flt.chunk_ids is not None:
        must.append(qe.FieldCondition("chunk_id", match=qe.MatchAny(list(flt.chunk_ids))))
    return qe.Filter(must=must) if must else None


def edge_payload(flt: ChunkFilter) -> bool | qe.PayloadSelector:
    """The payload to read back: all of it but the keys the filter leaves out."""
    left_out = flt.left_out()
    return qe.PayloadSelector.Exclude(left_out) if left_out else True


def _vectors(vector: Any) -> tuple[Any, Any]:
    return sparse_of(vector, SPARSE_VECTOR), sparse_of(vector, DENSE_VECTOR)


class EdgeReads:
    """Searches, scrolls and counts of the served shard, under `_lock` (a switch never closes a shard a
    read is using)."""

    _lock: threading.RLock
    _active_shard: qe.EdgeShard | None
    _active: str | None
    _manifest: Manifest | None
    page_size: int

    # --- reads ---
    @property
    def active_generation(self) -> str | None:
        return self._active

    def manifest(self) -> Manifest | None:
        return self._manifest

    def scroll(self, flt: ChunkFilter) -> list[Chunk]:
        with self._lock:
            shard = self._active_shard
            if shard is None:
                return []
            payloads = _scroll_payloads(shard, edge_filter(flt), edge_payload(flt), self.page_size)
            return [Chunk.from_payload(p) for p in payloads]

    def count(self, flt: ChunkFilter) -> int:
        with self._lock:
            if self._active_shard is None:
                return 0
            return int(self._active_shard.count(qe.CountRequest(exact=True, filter=edge_filter(flt))))

    def search_dense(self, vector: Sequence[float], flt: ChunkFilter, limit: int) -> list[Hit]:
        query = qe.Query.Nearest([float(x) for x in vector], using=DENSE_VECTOR)
        return self._query(query, None, flt, limit, ScoreKind.DENSE)

    def search_sparse(self, vector: SparseVector, flt: ChunkFilter, limit: int) -> list[Hit]:
        if not vector.indices:
            return []
        query = qe.Query.Nearest(
            qe.SparseVector(list(vector.indices), list(vector.values)), using=SPARSE_VECTOR
        )
        return self._query(query, None, flt, limit, ScoreKind.LEXICAL)

    def search_hybrid(
        self, dense: Sequence[float], sparse: SparseVector, flt: ChunkFilter, limit: int
    ) -> list[Hit]:
        qfilter = edge_filter(flt)
        depth = prefetch_limit(limit)
        prefetches = [
            qe.Prefetch(
                limit=depth,
                query=qe.Query.Nearest([float(x) for x in dense], using=DENSE_VECTOR),
                filter=qfilter,
                params=qe.SearchParams(exact=True),
            )
        ]
        if sparse.indices:
            prefetches.append(
                qe.Prefetch(
                    limit=depth,
                    query=qe.Query.Nearest(
                        qe.SparseVector(list(sparse.indices), list(sparse.values)), using=SPARSE_VECTOR
                    ),
                    filter=qfilter,
                )
            )
        return self._query(qe.Fusion.Rrf(k=RRF_K), prefetches, flt, limit, ScoreKind.FUSED)

    def _query(
        self, query: Any, prefetches: list[qe.Prefetch] | None, flt: ChunkFilter, limit: int, kind: ScoreKind
    ) -> list[Hit]:
        if limit <= 0:
            return []
        # searched candidates carry their BM25 terms and dense vector (what the reranker blends)
        terms = kind is not ScoreKind.DENSE
        request = qe.QueryRequest(
            limit=fetch_limit(limit),
            query=query,
            prefetches=prefetches,
            filter=edge_filter(flt),
            with_payload=edge_payload(flt),
            with_vector=[SPARSE_VECTOR, DENSE_VECTOR] if terms else False,
            params=qe.SearchParams(exact=True) if kind is ScoreKind.DENSE else None,
        )
        with self._lock:
            if self._active_shard is None:
                return []
            points = self._active_shard.query(request)
        rows = [(p.payload or {}, p.score, *(_vectors(p.vector) if terms else (None, None))) for p in points]
        return to_hits(rows, kind, limit)

def _scroll_payloads(shard: qe.EdgeShard, qfilter: qe.Filter | None, with_payload: bool | qe.PayloadSelector,
                     page_size: int) -> list[dict[str, Any]]:
    """Every matching payload: page until the next offset is exhausted (never a top-k)."""
    payloads: list[dict[str, Any]] = []
    offset: Any = None
    while True:
        records, offset = shard.scroll(
            qe.ScrollRequest(
                offset=offset, limit=page_size, filter=qfilter, with_payload=with_payload, with_vector=False
            )
        )
        payloads.extend(r.payload or {} for r in records)
        if offset is None:
            return payloads


