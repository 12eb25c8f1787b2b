"""Qdrant server or cluster through qdrant-client (local mode `:memory:` / a path stands in for tests).

Generations are collections `{prefix}__{generation}`; the alias `{prefix}` names the served one, and
reads go through the alias. Manifests are points of the collection `{prefix}__manifest`, one per
generation. `switch` writes the manifest point first and then swaps the alias in one
`update_collection_aliases` call, which Qdrant applies atomically: a reader sees the old generation or
the new one, never a mixture. Old generation collections are dropped after the swap.
"""

from __future__ import annotations

import threading
import time
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models

from rag_server.domain import Chunk, Hit, Manifest, ScoreKind
from rag_server.store.base import (
    DENSE_VECTOR,
    INDEXED_FIELDS,
    SPARSE_VECTOR,
    ChunkFilter,
    PointData,
    SparseVector,
)
from rag_server.store.common import (
    RRF_K,
    SCROLL_PAGE_SIZE,
    StoreError,
    fetch_limit,
    prefetch_limit,
    sparse_of,
    to_hits,
)

MANIFEST_SUFFIX = "__manifest"
_MANIFEST_NS = uuid.UUID("0b9a4c1e-3d5f-5a7b-9c1d-2e4f6a8b0c12")


def client_filter(flt: ChunkFilter) -> models.Filter | None:
    must: list[models.Condition] = []
    if flt.drug_id is not None:
        must.append(models.FieldCondition(key="drug_id", match=models.MatchValue(value=flt.drug_id)))
    if flt.drug_ids is not None:
        must.append(models.FieldCondition(key="drug_id", match=models.MatchAny(any=list(flt.drug_ids))))
    if flt.section_keys is not None:
        must.append(
            models.FieldCondition(key="section_key", match=models.MatchAny(any=list(flt.section_keys)))
        )
    if flt.chunk_kind is not None:
        must.append(models.FieldCondition(key="chunk_kind", match=models.MatchValue(value=flt.chunk_kind)))
    if flt.chunk_ids is not None:
        must.append(models.FieldCondition(key="chunk_id", match=models.MatchAny(any=list(flt.chunk_ids))))
    return models.Filter(must=must) if must else None


def client_payload(flt: ChunkFilter) -> bool | models.PayloadSelectorExclude:
    """The payload to read back: all of it but the keys the filter leaves out."""
    left_out = flt.left_out()
    return models.PayloadSelectorExclude(exclude=left_out) if left_out else True


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


class QdrantStore:
    def __init__(
        self,
        client: QdrantClient,
        prefix: str,
        *,
        local: bool,
        shard_number: int = 1,
        replication_factor: int = 1,
        write_consistency_factor: int = 1,
        page_size: int = SCROLL_PAGE_SIZE,
        alias_ttl_s: float = 1.0,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.local = local
        self.shard_number = shard_number
        self.replication_factor = replication_factor
        self.write_consistency_factor = write_consistency_factor
        self.page_size = page_size
        self.alias_ttl_s = alias_ttl_s
        self.manifest_collection = f"{prefix}{MANIFEST_SUFFIX}"
        # exact dense search (the corpus is ~15k points); local mode is always exact and warns on params
        self._exact = None if local else models.SearchParams(exact=True)
        # local mode is not thread-safe; a server is, but one lock also keeps switch/read ordering simple
        self._lock = threading.RLock()
        self._writing: set[str] = set()
        self._alias_cache: tuple[float, str | None] | None = None
        self._manifests: dict[str, Manifest] = {}
        with self._lock:
            if not self.client.collection_exists(self.manifest_collection):
                self.client.create_collection(self.manifest_collection, vectors_config={})
            if local:
                self._drop_orphans(keep=self.active_generation)

    # --- names ---
    def collection_for(self, generation: str) -> str:
        if not generation or not all(c.isalnum() or c in "-_" for c in generation):
            raise StoreError(f"invalid generation id {generation!r}")
        return f"{self.prefix}__{generation}"

    def _generation_collections(self) -> list[str]:
        head = f"{self.prefix}__"
        return [
            c.name
            for c in self.client.get_collections().collections
            if c.name.startswith(head) and c.name != self.manifest_collection
        ]

    @property
    def active_generation(self) -> str | None:
        """The generation the alias points at (re-read from the server at most every `alias_ttl_s`,
        RAG_QDRANT_ALIAS_TTL_S; a switch by this process is seen at once; reads always go through the alias
        itself)."""
        with self._lock:
            now = time.monotonic()
            if self._alias_cache is not None and now - self._alias_cache[0] < self.alias_ttl_s:
                return self._alias_cache[1]
            generation: str | None = None
            for alias in self.client.get_aliases().aliases:
                if alias.alias_name == self.prefix:
                    generation = alias.collection_name[len(self.prefix) + 2 :]
            self._alias_cache = (now, generation)
            return generation

    def _forget_alias(self) -> None:
        self._alias_cache = None

    def _drop_orphans(self, keep: str | None) -> None:
        keep_names = {self.collection_for(g) for g in self._writing}
        if keep is not None:
            keep_names.add(self.collection_for(keep))
        for name in self._generation_collections():
            if name not in keep_names:
                self.client.delete_collection(name)
                self._delete_manifest(name[len(self.prefix) + 2 :])

    def _delete_manifest(self, generation: str) -> None:
        self.client.delete(
            self.manifest_collection,
            points_selector=models.PointIdsList(points=[str(uuid.uuid5(_MANIFEST_NS, generation))]),
        )

    # --- reads ---
    def manifest(self) -> Manifest | None:
        with self._lock:
            generation = self.active_generation
            if generation is None:
                return None
            cached = self._manifests.get(generation)  # a generation's manifest never changes
            if cached is not None:
                return cached
            records = self.client.retrieve(
                self.manifest_collection, ids=[str(uuid.uuid5(_MANIFEST_NS, generation))], with_payload=True
            )
            if not records or not records[0].payload:
                raise StoreError(f"generation {generation!r} is served but has no manifest record")
            manifest = Manifest.from_dict(dict(records[0].payload))
            self._manifests = {generation: manifest}
            return manifest

    def _served(self) -> bool:
        return self.active_generation is not None

    def scroll(self, flt: ChunkFilter) -> list[Chunk]:
        qfilter = client_filter(flt)
        chunks: list[Chunk] = []
        offset: Any = None
        with self._lock:
            if not self._served():
                return []
            while True:
                records, offset = self.client.scroll(
                    self.prefix,
                    scroll_filter=qfilter,
                    limit=self.page_size,
                    offset=offset,
                    with_payload=client_payload(flt),
                    with_vectors=False,
                )
                chunks.extend(Chunk.from_payload(dict(r.payload or {})) for r in records)
                if offset is None:
                    return chunks

    def count(self, flt: ChunkFilter) -> int:
        with self._lock:
            if not self._served():
                return 0
            return int(self.client.count(self.prefix, count_filter=client_filter(flt), exact=True).count)

    def search_dense(self, vector: Sequence[float], flt: ChunkFilter, limit: int) -> list[Hit]:
        return self._query(
            ScoreKind.DENSE,
            limit,
            flt,
            query=[float(x) for x in vector],
            using=DENSE_VECTOR,
            search_params=self._exact,
        )

    def search_sparse(self, vector: SparseVector, flt: ChunkFilter, limit: int) -> list[Hit]:
        if not vector.indices:
            return []
        return self._query(ScoreKind.LEXICAL, limit, flt, query=_sparse(vector), using=SPARSE_VECTOR)

    def search_hybrid(
        self, dense: Sequence[float], sparse: SparseVector, flt: ChunkFilter, limit: int
    ) -> list[Hit]:
        qfilter = client_filter(flt)
        depth = prefetch_limit(limit)
        prefetch = [
            models.Prefetch(
                query=[float(x) for x in dense],
                using=DENSE_VECTOR,
                filter=qfilter,
                limit=depth,
                params=self._exact,
            )
        ]
        if sparse.indices:
            prefetch.append(
                models.Prefetch(query=_sparse(sparse), using=SPARSE_VECTOR, filter=qfilter, limit=depth)
            )
        return self._query(
            ScoreKind.FUSED, limit, flt, query=models.RrfQuery(rrf=models.Rrf(k=RRF_K)), prefetch=prefetch
        )

    def _query(self, kind: ScoreKind, limit: int, flt: ChunkFilter, **kwargs: Any) -> list[Hit]:
        if limit <= 0:
            return []
        with self._lock:
            if not self._served():
                return []
            # searched candidates carry their BM25 terms and dense vector (what the reranker blends)
            terms = kind is not ScoreKind.DENSE
            response = self.client.query_points(
                self.prefix,
                query_filter=client_filter(flt),
                limit=fetch_limit(limit),
                with_payload=client_payload(flt),
                with_vectors=[SPARSE_VECTOR, DENSE_VECTOR] if terms else False,
                **kwargs,
            )
        rows = [
            (
                dict(p.payload or {}),
                p.score,
                sparse_of(p.vector, SPARSE_VECTOR) if terms else None,
                sparse_of(p.vector, DENSE_VECTOR) if terms else None,
            )
            for p in response.points
        ]
        return to_hits(rows, kind, limit)

    # --- writes ---
    def create_generation(self, generation: str, dims: int) -> None:
        name = self.collection_for(generation)
        with self._lock:
            if self.client.collection_exists(name):
                raise StoreError(f"generation {generation!r} already exists")
            self.client.create_collection(
                name,
                vectors_config={
                    DENSE_VECTOR: models.VectorParams(size=dims, distance=models.Distance.COSINE)
                },
                sparse_vectors_config={
                    SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)
                },
                shard_number=self.shard_number,
                replication_factor=self.replication_factor,
                write_consistency_factor=self.write_consistency_factor,
            )
            self._writing.add(generation)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # local mode: payload indexes have no effect
                for field in INDEXED_FIELDS:
                    self.client.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD, wait=True)

    def upsert(self, generation: str, points: Sequence[PointData]) -> None:
        if not points:
            return
        structs = [
            models.PointStruct(
                id=p.chunk.point_id,
                vector={DENSE_VECTOR: [float(x) for x in p.dense], SPARSE_VECTOR: _sparse(p.sparse)},
                payload=p.chunk.to_payload(),
            )
            for p in points
        ]
        with self._lock:
            if generation not in self._writing:
                raise StoreError(f"generation {generation!r} is not being written")
            self.client.upsert(self.collection_for(generation), points=structs, wait=True)

    def generation_count(self, generation: str) -> int:
        with self._lock:
            return int(self.client.count(self.collection_for(generation), exact=True).count)

    def switch(self, generation: str, manifest: Manifest) -> None:
        if manifest.generation != generation:
            raise StoreError(f"manifest names generation {manifest.generation!r}, not {generation!r}")
        name = self.collection_for(generation)
        with self._lock:
            if not self.client.collection_exists(name):
                raise StoreError(f"generation {generation!r} does not exist")
            self.client.upsert(
                self.manifest_collection,
                points=[
                    models.PointStruct(
                        id=str(uuid.uuid5(_MANIFEST_NS, generation)), vector={}, payload=manifest.to_dict()
                    )
                ],
                wait=True,
            )
            operations: list[models.AliasOperations] = []
            self._forget_alias()
            if self.active_generation is not None:
                operations.append(
                    models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=self.prefix))
                )
            operations.append(
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(collection_name=name, alias_name=self.prefix)
                )
            )
            self.client.update_collection_aliases(change_aliases_operations=operations)
            self._forget_alias()
            self._writing.discard(generation)
            self._drop_orphans(keep=generation)

    def drop_generation(self, generation: str) -> None:
        with self._lock:
            self._forget_alias()
            if generation == self.active_generation:
                raise StoreError(f"generation {generation!r} is being served; switch first")
            self._writing.discard(generation)
            name = self.collection_for(generation)
            if self.client.collection_exists(name):
                self.client.delete_collection(name)
            self._delete_manifest(generation)

    def close(self) -> None:
        with self._lock:
            self.client.close()
