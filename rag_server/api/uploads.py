"""The uploads folder (`<data-dir>/uploads`): a total quota and a retention.

* Quota (RAG_UPLOADS_MAX_TOTAL_MB): the bytes the folder holds are counted in process — measured at start
  and at every sweep, then moved by every upload (each chunk is reserved before it is written) and every
  removal — so an upload that would take the folder over the quota is refused at the chunk that would
  (or at once, from the size its metadata declares) with RESOURCE_EXHAUSTED and a google.rpc.QuotaFailure,
  and its partial file is removed. Concurrent uploads share the quota.
* Retention: an uploaded PDF is removed once an ingest of it ends, whatever its outcome (check_only
  excepted: the real ingest comes next), and a sweep removes every upload older than RAG_UPLOADS_MAX_AGE_S
  (by modification time), at start and then every min(age / 2, 1 h). A file being written or being
  ingested is never swept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

from rag_server.config import Settings
from rag_server.request_errors import RequestError

log = logging.getLogger("rag_server.api.uploads")

MIB = 1024 * 1024
MAX_SWEEP_INTERVAL_S = 3600.0
MIN_SWEEP_INTERVAL_S = 1.0


def _mib(n: int) -> str:
    return f"{n / MIB:.1f}"


class UploadsFolder:
    """The uploads folder's byte count, the uploads being written and ingested, and their removal. The
    counters are shared by the event loop (uploads) and worker threads (ingest, sweeps): under a lock."""

    def __init__(
        self, folder: Path, max_total_bytes: int, max_age_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.folder = folder
        self.max_total_bytes = max_total_bytes
        self.max_age_s = max_age_s
        self.clock = clock
        self._lock = threading.Lock()
        self._used = 0  # bytes of the folder's files, the parts being written included
        self._writing: dict[str, int] = {}  # name of a partial file being written -> bytes reserved
        self._held: Counter[Path] = Counter()  # uploads an ingest is reading

    @classmethod
    def of(cls, settings: Settings) -> UploadsFolder:
        return cls(settings.uploads_dir, settings.uploads_max_total_mb * MIB, settings.uploads_max_age_s)

    @property
    def sweep_interval_s(self) -> float:
        return max(MIN_SWEEP_INTERVAL_S, min(self.max_age_s / 2, MAX_SWEEP_INTERVAL_S))

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._used

    # --- quota ------------------------------------------------------------------------------------------
    def measure(self) -> int:
        """Recount the folder from disk (the parts being written count what they reserved)."""
        with self._lock:
            on_disk = sum(size for name, size, _ in self._files() if name not in self._writing)
            self._used = on_disk + sum(self._writing.values())
            return self._used

    def check_room(self, size: int) -> None:
        """Refuse at once an upload declaring more than the room left (nothing is reserved)."""
        with self._lock:
            if size > 0 and self._used + size > self.max_total_bytes:
                raise self._quota_error(size)

    def begin(self, part: Path) -> None:
        with self._lock:
            self._writing[part.name] = 0

    def reserve(self, part: Path, size: int) -> None:
        """Count `size` more bytes of `part` before they are written; QuotaFailure when they do not fit."""
        with self._lock:
            if self._used + size > self.max_total_bytes:
                raise self._quota_error(size)
            self._used += size
            self._writing[part.name] += size

    def commit(self, part: Path, final: Path) -> None:
        """The complete part becomes `final` (replacing an identical earlier upload, whose bytes go)."""
        with self._lock:
            try:
                replaced = final.stat().st_size
            except FileNotFoundError:
                replaced = 0
            os.replace(part, final)
            self._writing.pop(part.name, None)
            self._used -= replaced

    def abort(self, part: Path) -> None:
        """A failed upload: its partial file removed and its bytes given back (no-op once committed)."""
        with self._lock:
            reserved = self._writing.pop(part.name, None)
            part.unlink(missing_ok=True)
            if reserved is not None:
                self._used -= reserved

    def _quota_error(self, size: int) -> RequestError:
        limit = self.max_total_bytes
        return RequestError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"the uploads folder is full: {_mib(self._used)} MiB of {_mib(limit)} MiB held "
            "(RAG_UPLOADS_MAX_TOTAL_MB); an upload is removed once it has been ingested, or after "
            "RAG_UPLOADS_MAX_AGE_S: ingest or wait, then upload again",
            quota=[("uploads", f"RAG_UPLOADS_MAX_TOTAL_MB={limit // MIB}: {self._used} bytes held, "
                               f"{size} more would exceed {limit}")],
        )

    # --- retention --------------------------------------------------------------------------------------
    def _is_upload(self, path: Path) -> bool:
        return path.suffix == ".pdf" and path.parent == self.folder.resolve()

    @contextlib.contextmanager
    def hold(self, path: Path) -> Iterator[None]:
        """While an ingest reads `path`, the sweep leaves it alone."""
        with self._lock:
            self._held[path] += 1
        try:
            yield
        finally:
            with self._lock:
                self._held[path] -= 1
                if self._held[path] <= 0:
                    del self._held[path]

    def discard(self, path: Path) -> bool:
        """Remove `path` if it is an upload (a PDF of the uploads folder, not of an ingest root)."""
        if not self._is_upload(path):
            return False
        with self._lock:
            return self._remove(path)

    def _remove(self, path: Path) -> bool:
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.warning("upload %s not removed: %s", path.name, exc.strerror)
            return False
        self._used = max(0, self._used - size)
        return True

    def sweep(self) -> list[str]:
        """Remove every upload (partial files of a crashed server included) older than max_age_s; then
        recount the folder. The names removed."""
        removed: list[str] = []
        try:
            with self._lock:
                cutoff = self.clock() - self.max_age_s
                resolved = self.folder.resolve()
                for name, _, mtime in self._files():
                    path = resolved / name
                    if mtime < cutoff and name not in self._writing and path not in self._held \
                            and self._remove(path):
                        removed.append(name)
            self.measure()
        except OSError as exc:
            log.warning("uploads sweep failed: %s", exc)
        if removed:
            log.info("uploads sweep: removed %d upload(s) older than %gs", len(removed), self.max_age_s)
        return removed

    def _files(self) -> list[tuple[str, int, float]]:
        """(name, size, mtime) of the folder's regular files; [] when there is no folder yet."""
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return []
        out: list[tuple[str, int, float]] = []
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    out.append((entry.name, st.st_size, st.st_mtime))
        return out

    def start(self) -> asyncio.Task[None]:
        """Sweep now (before the first call), then every sweep_interval_s until the task is cancelled."""
        self.sweep()

        async def sweep_forever() -> None:
            while True:
                await asyncio.sleep(self.sweep_interval_s)
                await asyncio.to_thread(self.sweep)

        return asyncio.get_running_loop().create_task(sweep_forever(), name="uploads-sweep")
