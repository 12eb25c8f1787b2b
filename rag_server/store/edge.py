"""Embedded Qdrant (qdrant-edge-py): one EdgeShard directory per generation under `<data_dir>/store`.

Layout:
  store/.lock                      flock held while open: one process owns a data dir at a time
  store/ACTIVE.json                {"generation": ..., "manifest": {...}}: the served generation,
                                   replaced atomically (write temp, fsync, os.replace, fsync dir)
  store/generations/<generation>/  one shard per load

A reopen serves the generation ACTIVE.json names and removes every other generation directory
(half-written loads of a crashed process). Reads (edge_reads.py) and the switch share one lock, so a read
never sees a closed shard. Another process reads the store through a private copy of the served generation
(follower.py): a shard directory is open in one process at a time (its WAL is locked).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from rag_server.domain import Manifest
from rag_server.store.base import (
    DENSE_VECTOR,
    INDEXED_FIELDS,
    SPARSE_VECTOR,
    PointData,
)
from rag_server.store.common import SCROLL_PAGE_SIZE, StoreError
from rag_server.store.edge_reads import EdgeReads, edge_filter, edge_payload

__all__ = ["GENERATIONS_DIR", "POINTER_FILE", "EdgeStore", "edge_filter", "edge_payload", "write_json_atomic"]

POINTER_FILE = "ACTIVE.json"
GENERATIONS_DIR = "generations"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class EdgeStore(EdgeReads):
    def __init__(self, root: Path, *, page_size: int = SCROLL_PAGE_SIZE) -> None:
        self.root = root
        self.page_size = page_size
        root.mkdir(parents=True, exist_ok=True)
        (root / GENERATIONS_DIR).mkdir(exist_ok=True)
        self._lock_handle: IO[str] | None = _acquire_dir_lock(root)
        self._lock = threading.RLock()  # the active shard (reads, switch)
        self._write_lock = threading.RLock()  # generations being written; taken before _lock, never after
        self._writers: dict[str, qe.EdgeShard] = {}
        self._active: str | None = None
        self._active_shard: qe.EdgeShard | None = None
        self._manifest: Manifest | None = None
        try:
            self._open_active()
        except BaseException:
            self.close()
            raise

    # --- opening ---
    def _gen_dir(self, generation: str) -> Path:
        if not generation or "/" in generation or generation.startswith("."):
            raise StoreError(f"invalid generation id {generation!r}")
        return self.root / GENERATIONS_DIR / generation

    def _open_active(self) -> None:
        pointer = self.root / POINTER_FILE
        if pointer.exists():
            data = json.loads(pointer.read_text(encoding="utf-8"))
            generation = str(data["generation"])
            path = self._gen_dir(generation)
            if not path.is_dir():
                raise StoreError(f"{pointer} names generation {generation!r} but {path} is missing")
            self._active_shard = qe.EdgeShard.load(str(path))
            self._active = generation
            self._manifest = Manifest.from_dict(data["manifest"])
        for child in (self.root / GENERATIONS_DIR).iterdir():
            if child.name != self._active:
                shutil.rmtree(child, ignore_errors=True)

    # --- writes ---
    def create_generation(self, generation: str, dims: int) -> None:
        path = self._gen_dir(generation)
        with self._write_lock:
            if generation == self._active or generation in self._writers or path.exists():
                raise StoreError(f"generation {generation!r} already exists")
            config = qe.EdgeConfig(
                vectors={DENSE_VECTOR: qe.EdgeVectorParams(size=dims, distance=qe.Distance.Cosine)},
                sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            )
            shard = qe.EdgeShard.create(str(path), config)
            try:
                for name in INDEXED_FIELDS:
                    shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
            except BaseException:
                shard.close()
                shutil.rmtree(path, ignore_errors=True)
                raise
            self._writers[generation] = shard

    def _writer(self, generation: str) -> qe.EdgeShard:
        shard = self._writers.get(generation)
        if shard is None:
            raise StoreError(f"generation {generation!r} is not being written")
        return shard

    def upsert(self, generation: str, points: Sequence[PointData]) -> None:
        if not points:
            return
        edge_points = [
            qe.Point(
                p.chunk.point_id,
                {
                    DENSE_VECTOR: [float(x) for x in p.dense],
                    SPARSE_VECTOR: qe.SparseVector(list(p.sparse.indices), list(p.sparse.values)),
                },
                p.chunk.to_payload(),
            )
            for p in points
        ]
        with self._write_lock:  # reads of the served generation go on meanwhile
            self._writer(generation).update(qe.UpdateOperation.upsert_points(edge_points))

    def generation_count(self, generation: str) -> int:
        with self._write_lock:
            if generation in self._writers:
                return int(self._writer(generation).count(qe.CountRequest(exact=True)))
        with self._lock:
            if generation == self._active and self._active_shard is not None:
                return int(self._active_shard.count(qe.CountRequest(exact=True)))
        raise StoreError(f"generation {generation!r} is not being written")

    def switch(self, generation: str, manifest: Manifest) -> None:
        if manifest.generation != generation:
            raise StoreError(f"manifest names generation {manifest.generation!r}, not {generation!r}")
        with self._write_lock, self._lock:
            shard = self._writer(generation)
            shard.flush()
            write_json_atomic(self._gen_dir(generation) / "manifest.json", manifest.to_dict())
            write_json_atomic(
                self.root / POINTER_FILE, {"generation": generation, "manifest": manifest.to_dict()}
            )
            old_shard, old_generation = self._active_shard, self._active
            self._active_shard, self._active, self._manifest = shard, generation, manifest
            del self._writers[generation]
            if old_shard is not None:
                with contextlib.suppress(Exception):  # the switch is done; a failed close only leaks
                    old_shard.close()
            if old_generation is not None:
                shutil.rmtree(self._gen_dir(old_generation), ignore_errors=True)
            for child in (self.root / GENERATIONS_DIR).iterdir():
                if child.name != generation and child.name not in self._writers:
                    shutil.rmtree(child, ignore_errors=True)

    def drop_generation(self, generation: str) -> None:
        with self._write_lock:
            if generation == self._active:
                raise StoreError(f"generation {generation!r} is being served; switch first")
            shard = self._writers.pop(generation, None)
            if shard is not None:
                with contextlib.suppress(Exception):
                    shard.close()
            shutil.rmtree(self._gen_dir(generation), ignore_errors=True)

    def close(self) -> None:
        with self._write_lock, self._lock:
            for shard in [*self._writers.values(), self._active_shard]:
                if shard is not None:
                    with contextlib.suppress(Exception):
                        shard.close()
            self._writers.clear()
            self._active_shard = None
            if self._lock_handle is not None:
                fcntl.flock(self._lock_handle, fcntl.LOCK_UN)
                self._lock_handle.close()
                self._lock_handle = None


def _acquire_dir_lock(root: Path) -> IO[str]:
    handle = (root / ".lock").open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.seek(0)
        owner = handle.read().strip()[:12]
        handle.close()
        pid = f" (pid {owner})" if owner.isdigit() else ""
        raise StoreError(
            f"another process{pid} owns the data dir {root.parent}: stop it, or point --data-dir "
            "(RAG_DATA_DIR) at another directory; `rag-server ingest` hands its work to a running server"
        ) from exc
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle
