"""Load chunks + vectors into a NEW store generation, verify it, then switch it in with its manifest.

Any failure before the switch (an exception, a failed count check, KeyboardInterrupt) drops the
half-written generation: the previous corpus keeps serving, unchanged.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from rag_server.domain import SCHEMA_VERSION, Chunk, ChunkKind, Manifest
from rag_server.store.base import PointData, SparseVector, Store
from rag_server.store.common import new_generation
from rag_server.text.bm25 import document_vector

log = logging.getLogger("ingest.load")

StageProgress = Callable[[str, int, int, str], None]


class LoadError(RuntimeError):
    """The load could not be completed or verified; nothing was switched."""


def corpus_sha(chunks: Sequence[Chunk]) -> str:
    """sha256 over the chunks sorted by chunk_id (id and text of each): the same corpus, the same sha."""
    digest = hashlib.sha256()
    for chunk in sorted(chunks, key=lambda c: c.chunk_id):
        digest.update(chunk.chunk_id.encode("utf-8"))
        digest.update(b"\x00")
        digest.update(chunk.text.encode("utf-8"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def check_unique_ids(chunks: Sequence[Chunk]) -> None:
    duplicates = [cid for cid, n in Counter(c.chunk_id for c in chunks).items() if n > 1]
    if duplicates:
        raise LoadError(f"{len(duplicates)} duplicate chunk ids, e.g. {', '.join(sorted(duplicates)[:3])}")


def sparse_vectors(
    chunks: Sequence[Chunk], progress: StageProgress | None = None, cache_root: Path | None = None
) -> list[SparseVector]:
    """BM25 document vectors; with `cache_root`, vectors of texts seen before come from the disk cache."""

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress("sparse", done, total, "BM25 terms")

    report(0, len(chunks))  # stage start (stage timings run from a stage's first event to the next's)
    if cache_root is not None:
        from ingest.sparse_cache import sparse_vectors_cached

        vectors, _ = sparse_vectors_cached([c.text for c in chunks], cache_root, report)
        return vectors
    out: list[SparseVector] = []
    total = len(chunks)
    step = max(1, total // 50)
    for i, chunk in enumerate(chunks, 1):
        out.append(document_vector(chunk.text))
        if i % step == 0 or i == total:
            report(i, total)
    return out


def make_manifest(
    chunks: Sequence[Chunk],
    *,
    generation: str,
    embedding_model: str,
    dims: int,
    document_id: str,
    monograph_count: int,
    section_count: int,
    indication_dense_floor: float = 0.0,
) -> Manifest:
    return Manifest(
        corpus_sha=corpus_sha(chunks),
        embedding_model=embedding_model,
        dims=dims,
        monograph_count=monograph_count,
        section_count=section_count,
        chunk_count=len(chunks),
        block_count=sum(1 for c in chunks if c.chunk_kind is ChunkKind.BLOCK),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        generation=generation,
        document_id=document_id,
        schema_version=SCHEMA_VERSION,
        indication_dense_floor=indication_dense_floor,
    )


def load_generation(
    store: Store,
    chunks: Sequence[Chunk],
    dense: Sequence[Sequence[float]],
    sparse: Sequence[SparseVector],
    *,
    dims: int,
    batch_size: int,
    manifest_for: Callable[[str], Manifest],
    progress: StageProgress | None = None,
) -> Manifest:
    """Write every point into a new generation, check the count, switch. Returns the served manifest."""
    if not (len(chunks) == len(dense) == len(sparse)):
        raise LoadError(f"{len(chunks)} chunks but {len(dense)} dense and {len(sparse)} sparse vectors")
    check_unique_ids(chunks)
    for chunk, vector in zip(chunks, dense, strict=True):
        if len(vector) != dims:
            raise LoadError(f"{chunk.chunk_id}: vector has {len(vector)} dimensions, expected {dims}")
    def say(stage: str, done: int, total: int, message: str) -> None:
        if progress is not None:
            progress(stage, done, total, message)

    total = len(chunks)
    generation = new_generation()
    say("load", 0, total, f"generation {generation}")
    store.create_generation(generation, dims)
    try:
        for start in range(0, total, batch_size):
            end = min(start + batch_size, total)
            store.upsert(
                generation,
                [
                    PointData(chunk=chunks[i], dense=list(dense[i]), sparse=sparse[i])
                    for i in range(start, end)
                ],
            )
            say("load", end, total, f"generation {generation}")
        say("verify", 0, total, "counting the points of the new generation")
        loaded = store.generation_count(generation)
        say("verify", loaded, total, "points in the new generation")
        if loaded != total:
            raise LoadError(f"generation {generation} holds {loaded} points, expected {total}; not switched")
        say("switch", 0, 1, "manifest and switch")
        manifest = manifest_for(generation)
        store.switch(generation, manifest)
    except BaseException:
        try:
            store.drop_generation(generation)
        except Exception:  # e.g. the switch did complete; a reopen removes any leftover generation
            log.exception("could not drop generation %s", generation)
        raise
    say("switch", 1, 1, f"serving generation {generation}")
    return manifest
