"""Timing wrappers around what the factories built: the embedder, the store, the reranker's provider and the
Ask parts (understander, generator, judge). No provider is edited: each wrapper times the one call that
matters, counts its failures (re-raised unchanged) and hands every other attribute to the object inside.

The wrappers are made for one server (its Metrics) and never modify a shared object: a caller's embedder
or store is wrapped, not patched, so another server using the same object is not affected.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

from rag_server.observability.metrics import Metrics


class _Forwarding:
    """Hands unknown attributes to `_inner`; bound methods are cached on first use (one lookup, then none)."""

    _inner: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        value = getattr(self._inner, name)
        if inspect.ismethod(value):
            self.__dict__[name] = value
        return value


def _timed(
    fn: Callable[..., Any], observe: Callable[[float], None], on_error: Callable[[BaseException], None]
) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            on_error(exc)
            raise
        finally:
            with contextlib.suppress(Exception):  # metrics never fail a call
                observe(time.perf_counter() - started)

    return call


class InstrumentedEmbedder(_Forwarding):
    """An Embedder whose `embed` is timed by kind ("query" | "document")."""

    def __init__(self, inner: Any, metrics: Metrics, name: str) -> None:
        self._inner = inner
        self.model = inner.model
        self.dims = inner.dims
        kinds = ("query", "document")
        self._observe = {kind: metrics.provider_timer("embedder", name, kind) for kind in kinds}
        self._error = {
            kind: (lambda exc, k=kind: metrics.provider_error("embedder", name, k, exc))
            for kind in kinds
        }

    def embed(self, texts: Sequence[str], kind: Any) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return self._inner.embed(texts, kind)  # type: ignore[no-any-return]
        except Exception as exc:
            if kind in self._error:
                self._error[kind](exc)
            raise
        finally:
            observe = self._observe.get(kind)
            if observe is not None:
                observe(time.perf_counter() - started)


class InstrumentedReranker(_Forwarding):
    """The provider inside a GuardedReranker: its `rerank` timed (the guard's timeout and breaker stay
    outside, unchanged)."""

    def __init__(self, inner: Any, metrics: Metrics, name: str) -> None:
        self._inner = inner
        self.name = inner.name
        self.uses_dense_scores = inner.uses_dense_scores
        self.local = inner.local
        self.rerank = _timed(
            inner.rerank, metrics.provider_timer("reranker", name, "rerank"),
            lambda exc: metrics.provider_error("reranker", name, "rerank", exc),
        )


class InstrumentedPart(_Forwarding):
    """An Ask part (understander, generator, judge): its one provider method timed."""

    def __init__(self, inner: Any, metrics: Metrics, provider: str, method: str) -> None:
        self._inner = inner
        self.name = inner.name
        name = str(inner.name)
        setattr(self, method, _timed(
            getattr(inner, method), metrics.provider_timer(provider, name, method),
            lambda exc: metrics.provider_error(provider, name, method, exc),
        ))


STORE_READS = ("scroll", "count", "search_dense", "search_sparse", "search_hybrid")


class InstrumentedStore(_Forwarding):
    """A Store whose reads (scroll, count, searches) are timed; writes and the rest pass through."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self._inner = inner
        for operation in STORE_READS:
            method = getattr(inner, operation, None)
            if method is not None:
                self.__dict__[operation] = _timed(
                    method, metrics.store_timer(operation), lambda exc: None
                )
