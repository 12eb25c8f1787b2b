"""A read-only view of an embedded store another process owns (edge.py; `rag-server serve --workers`).

A shard directory is open in one process at a time (qdrant-edge locks its WAL), so a follower serves a
private copy of the generation `ACTIVE.json` names: its segments copied hole for hole (the preallocated
files are mostly holes: a copy takes their data only), without the WAL (the owner flushed the generation
before switching to it; a shard loads without one). `follow()` (blocking) copies and loads the generation
the owner switched to, then swaps it in under the read lock and removes the copy it replaces; nothing of
the owner's directory is ever written, and the owner removing an old generation cannot disturb a follower
still serving its copy. A copy that raced with another switch (ACTIVE.json names another generation once
it is made) is dropped, and the next `follow()` copies the new one.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rag_server.domain import Manifest
from rag_server.store.base import PointData
from rag_server.store.common import SCROLL_PAGE_SIZE, StoreError
from rag_server.store.edge import GENERATIONS_DIR, POINTER_FILE
from rag_server.store.edge_reads import EdgeReads

log = logging.getLogger("rag_server.store")

COPY_BLOCK = 1 << 20
READ_ONLY = "this worker reads the store another worker owns; ingestion runs there"


def copy_sparse(src: Path, dst: Path) -> None:
    """`src` (a file) to `dst`, its holes left holes (SEEK_DATA / SEEK_HOLE), its size kept."""
    with src.open("rb") as reader, dst.open("wb") as writer:
        rfd, wfd = reader.fileno(), writer.fileno()
        size = os.fstat(rfd).st_size
        offset = 0
        while offset < size:
            try:
                start = os.lseek(rfd, offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = os.lseek(rfd, start, os.SEEK_HOLE)
            while start < end:
                data = os.pread(rfd, min(COPY_BLOCK, end - start), start)
                if not data:
                    break
                os.pwrite(wfd, data, start)
                start += len(data)
            offset = end
        os.ftruncate(wfd, size)


def copy_generation(src: Path, dst: Path) -> None:
    """A generation directory without its WAL, every file copied sparse."""
    for folder, dirs, files in os.walk(src):
        here = Path(folder)
        if here == src:
            dirs[:] = [d for d in dirs if d != "wal"]
        target = dst / here.relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            copy_sparse(here / name, target / name)


def _pointer(root: Path) -> tuple[tuple[int, int, int], dict[str, Any]] | None:
    """(stat stamp, content) of ACTIVE.json; None when there is none (nothing served yet)."""
    path = root / POINTER_FILE
    try:
        st = path.stat()
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_ino, st.st_size), data


class FollowerEdgeStore(EdgeReads):
    """The generation the owner of `root` serves, read from a private copy under `private`."""

    def __init__(self, root: Path, private: Path, *, page_size: int = SCROLL_PAGE_SIZE) -> None:
        self.root = root
        self.private = private
        self.page_size = page_size
        self._lock = threading.RLock()  # the served shard (reads, swap)
        self._follow_lock = threading.Lock()  # one copy at a time
        self._active: str | None = None
        self._active_shard: qe.EdgeShard | None = None
        self._manifest: Manifest | None = None
        self._stamp: tuple[int, int, int] | None = None
        shutil.rmtree(private, ignore_errors=True)  # a copy left by a worker that crashed
        private.mkdir(parents=True)
        try:
            self.follow()
        except BaseException:
            self.close()
            raise

    @property
    def active_generation(self) -> str | None:
        return self._active

    def manifest(self) -> Manifest | None:
        return self._manifest

    def follow(self) -> bool:
        """Serve the generation ACTIVE.json names now (blocking: a copy and a load when it changed); True
        when the served generation changed."""
        with self._follow_lock:
            found = _pointer(self.root)
            if found is None or found[0] == self._stamp:
                return False
            stamp, data = found
            generation = str(data["generation"])
            if generation == self._active:
                self._stamp = stamp
                return False
            copy = self.private / generation
            shutil.rmtree(copy, ignore_errors=True)
            try:
                copy_generation(self.root / GENERATIONS_DIR / generation, copy)
            except OSError as exc:  # removed by a newer switch while being copied: the next call follows it
                shutil.rmtree(copy, ignore_errors=True)
                log.info("generation %s could not be copied (%s): following the next one", generation, exc)
                return False
            again = _pointer(self.root)
            if again is None or str(again[1]["generation"]) != generation:
                shutil.rmtree(copy, ignore_errors=True)
                return False
            shard = qe.EdgeShard.load(str(copy))
            manifest = Manifest.from_dict(data["manifest"])
            with self._lock:
                old_shard, old = self._active_shard, self._active
                self._active_shard, self._active, self._manifest = shard, generation, manifest
                self._stamp = stamp
            if old_shard is not None:
                with contextlib.suppress(Exception):
                    old_shard.close()
            if old is not None:
                shutil.rmtree(self.private / old, ignore_errors=True)
            log.info("following generation %s (a private copy of the owner's)", generation)
            return True

    # --- writes belong to the owner ---
    def create_generation(self, generation: str, dims: int) -> None:
        raise StoreError(READ_ONLY)

    def upsert(self, generation: str, points: Sequence[PointData]) -> None:
        raise StoreError(READ_ONLY)

    def generation_count(self, generation: str) -> int:
        raise StoreError(READ_ONLY)

    def switch(self, generation: str, manifest: Manifest) -> None:
        raise StoreError(READ_ONLY)

    def drop_generation(self, generation: str) -> None:
        raise StoreError(READ_ONLY)

    def close(self) -> None:
        with self._lock:
            if self._active_shard is not None:
                with contextlib.suppress(Exception):
                    self._active_shard.close()
            self._active_shard = None
        shutil.rmtree(self.private, ignore_errors=True)
