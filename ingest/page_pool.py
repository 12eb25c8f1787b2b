"""PDF pages read by this process and a pool of others, one per further CPU core: the costly part of
`build_chunks`.

Reading a page (`ingest.parse.extract_page`: text, rules, grid tables) depends on that page alone, so ranges
of pages are handed out as the readers ask: this process starts on the first at once, and each worker
process, opening the PDF file itself, joins in when it is ready (starting one takes a few tenths of a
second, during which this process is not waiting). The pages come back in page order and everything after
(furniture, folios, tables, reading order, segmentation) runs as before, so the result is the one reading
them one by one gives (a test compares both). The workers check that the file is still the one hashed
(size and modification time); otherwise, or when one dies with a range in hand, the pages are read in the
calling process. Short documents are read there alone.

Workers are fresh interpreters (`python -m ingest.page_worker`, tasks and results as pickles over pipes),
not forked: safe in a multi-threaded server, and the caller's main script is never imported again.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, cast

from ingest.page_task import READY, PdfFile, ReadResult, receive, send
from ingest.parse import PageError, RawPage, ReadRange

log = logging.getLogger(__name__)

MIN_PAGES = 32  # documents shorter than this are read in the calling process alone
PAGES_PER_TASK = (8, 48)  # a task reads this many pages at least / at most (progress and balance)

PageProgress = Callable[[int, int], None]


def cpu_count() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_workers(requested: int) -> int:
    """Worker processes for `requested` (0: one per core)."""
    return requested if requested > 0 else cpu_count()


def task_ranges(total: int, workers: int) -> list[tuple[int, int]]:
    """[first, last) page indexes of each task: about four tasks a worker, within PAGES_PER_TASK."""
    low, high = PAGES_PER_TASK
    size = max(low, min(high, -(-total // (workers * 4))))
    return [(first, min(total, first + size)) for first in range(0, total, size)]


class _Worker:
    """One `python -m ingest.page_worker` process."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parent.parent)  # where the `ingest` package lives
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path)
        self.process = subprocess.Popen([sys.executable, "-m", "ingest.page_worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env)

    def ready(self) -> bool:
        """Waits for the worker to say it is ready (its imports done); False if it ended instead."""
        assert self.process.stdout is not None
        return receive(cast(BinaryIO, self.process.stdout)) == READY

    def run(self, task: tuple[PdfFile, int, int]) -> ReadResult:
        assert self.process.stdin is not None and self.process.stdout is not None
        send(cast(BinaryIO, self.process.stdin), task)
        result = receive(cast(BinaryIO, self.process.stdout))
        if not isinstance(result, ReadResult):
            raise RuntimeError(f"page worker: {result or 'ended without a result'}")
        return result

    def stop(self, kill: bool) -> None:
        if kill:
            self.process.kill()
        elif self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class _Tasks:
    """Ranges of pages handed to the readers as they ask, and their results in task order."""

    def __init__(self, tasks: list[tuple[PdfFile, int, int]]) -> None:
        self.tasks = tasks
        self.results: list[ReadResult | None] = [None] * len(tasks)
        self.failure: BaseException | None = None
        self.next = 0
        self.ready = threading.Condition()

    def take(self) -> int | None:
        with self.ready:
            if self.next >= len(self.tasks) or self.failure is not None:
                return None
            index, self.next = self.next, self.next + 1
            return index

    def done(self, index: int, result: ReadResult) -> None:
        with self.ready:
            self.results[index] = result
            self.ready.notify_all()

    def serve(self, worker: _Worker) -> None:
        """A worker's thread: once the worker is ready, the ranges it reads (a worker that never gets ready
        takes none, and its pages are read by the others)."""
        try:
            if not worker.ready():
                return
        except Exception as exc:  # it could not start: the others read its share
            log.debug("a page worker did not start: %s: %s", type(exc).__name__, exc)
            return
        try:
            while (index := self.take()) is not None:
                self.done(index, worker.run(self.tasks[index]))
        except BaseException as exc:  # handed to the caller
            with self.ready:
                self.failure = self.failure or exc
                self.ready.notify_all()

    def result(self, index: int, wait: bool = True) -> ReadResult | None:
        with self.ready:
            if wait:
                self.ready.wait_for(lambda: self.results[index] is not None or self.failure is not None)
            found = self.results[index]
            if found is None and self.failure is not None:
                raise self.failure
            return found


class PagePool:
    """Reads the pages of one PDF file with `workers` readers: this process and `workers - 1` worker
    processes; `warnings` collects MuPDF's warnings from those (the caller checks them for damage, as it
    checks its own)."""

    def __init__(self, source: PdfFile, workers: int) -> None:
        self.source = source
        self.workers = workers
        self.warnings: list[str] = []

    def usable(self, total: int) -> bool:
        return self.workers > 1 and total >= MIN_PAGES

    def read(self, total: int, here: ReadRange, progress: PageProgress | None = None) -> list[RawPage] | None:
        """Every page in order, `here` reading ranges in this process; None when the pool cannot be used or a
        worker failed (the caller reads them itself). Raises PageError for a page that cannot be read."""
        if not self.usable(total):
            return None
        try:
            return self._read(total, here, progress)
        except PageError:
            raise
        except Exception as exc:  # no processes (a sandbox), the file changed, a worker died
            log.warning("reading pages in %d processes failed (%s: %s); reading them here",
                        self.workers, type(exc).__name__, exc)
            self.warnings.clear()
            return None

    def _read(self, total: int, here: ReadRange, progress: PageProgress | None) -> list[RawPage]:
        tasks = _Tasks([(self.source, first, last) for first, last in task_ranges(total, self.workers)])
        workers: list[_Worker] = []
        pages: list[RawPage] = []
        try:
            workers = [_Worker() for _ in range(min(self.workers, len(tasks.tasks)) - 1)]
            for worker in workers:
                threading.Thread(target=tasks.serve, args=(worker,), daemon=True).start()
            collected = 0
            while (index := tasks.take()) is not None:
                _source, first, last = tasks.tasks[index]
                tasks.done(index, ReadResult([], "", here=here(first, last)))
                collected = self._collect(tasks, collected, pages, total, progress, wait=False)
            self._collect(tasks, collected, pages, total, progress, wait=True)
            return pages
        finally:
            for worker in workers:  # every range handed out has come back: none is working
                worker.stop(kill=True)

    def _collect(self, tasks: _Tasks, collected: int, pages: list[RawPage], total: int,
                 progress: PageProgress | None, wait: bool) -> int:
        """Adds the results that follow the `collected` first ones (waiting for them, `wait`); returns how
        many are collected now. Raises PageError for a page a worker could not read."""
        while collected < len(tasks.tasks):
            result = tasks.result(collected, wait)
            if result is None:
                break
            pages.extend(result.raw_pages())
            if result.warnings:
                self.warnings.append(result.warnings)
            if result.failed is not None:
                page, error = result.failed
                raise PageError(page, RuntimeError(error))
            collected += 1
            if progress is not None:
                progress(len(pages), total)
        return collected
