"""Cheap calls run on the event loop ("inline"); anything else on the worker pool.

Most calls need no blocking work: understanding is bounded CPU work, a whole section already looked up
is in the Retriever's section cache, the indication keyword pass is an in-memory index. Handing such a
call to a worker thread costs more than the call itself. So a servicer first tries a call inline; the
code right before every store or provider call says `needs_worker(what)`, which in inline mode unwinds the
call with NeedsWorker, and the servicer runs it again on the worker pool with its budget (api/work.py).
Nothing blocking ever runs on the event loop, and nothing partial escapes: inline work has no side
effects beyond the generation's caches.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

_inline: contextvars.ContextVar[bool] = contextvars.ContextVar("inline", default=False)


class NeedsWorker(Exception):
    """The call reached blocking work (store, embedder, reranker) while running inline."""


def needs_worker(what: str) -> None:
    """Call right before blocking work: a no-op on the worker pool, NeedsWorker when running inline."""
    if _inline.get():
        raise NeedsWorker(what)


@contextmanager
def inline() -> Iterator[None]:
    token = _inline.set(True)
    try:
        yield
    finally:
        _inline.reset(token)


def running_inline() -> bool:
    return _inline.get()
