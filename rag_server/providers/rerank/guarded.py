"""GuardedReranker: timeout + circuit breaker around any Reranker (seed 004).

A failure, a timeout or an open breaker keeps the incoming (fallback) order: the reranker is an
ordering aid, never a filter, so callers still apply their top_k and token cap to the fallback order.
The timeout is enforced with a daemon thread per call, so a hung provider cannot block a request
(nor interpreter exit); at most `max_outstanding` hung calls are tolerated before new calls fail fast.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_server.providers.base import Reranker
from rag_server.providers.rerank.breaker import CircuitBreaker

log = logging.getLogger("rag_server.rerank")

DISABLED = "disabled"


@dataclass(frozen=True)
class RerankOutcome:
    """order: (index into texts, score or None) best first; scores are None when the fallback was used."""

    order: list[tuple[int, float | None]]
    applied: bool
    state: str  # breaker state after the call
    error: str = ""
    millis: float = 0.0


class RerankTimeout(TimeoutError):
    pass


def fallback_order(count: int, top_k: int) -> list[tuple[int, float | None]]:
    return [(i, None) for i in range(min(count, top_k))]


class GuardedReranker:
    def __init__(
        self,
        inner: Reranker,
        timeout_s: float,
        breaker: CircuitBreaker,
        max_outstanding: int = 4,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.timeout_s = timeout_s
        self.breaker = breaker
        self.max_outstanding = max_outstanding
        self._outstanding = 0
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        return self.breaker.state

    def rerank(self, query: str, texts: Sequence[str], top_k: int) -> list[tuple[int, float]]:
        """The Reranker protocol: fallback positions get score 0.0 (use `rerank_guarded` to tell)."""
        outcome = self.rerank_guarded(query, texts, top_k)
        return [(i, s if s is not None else 0.0) for i, s in outcome.order]

    def rerank_guarded(
        self, query: str, texts: Sequence[str], top_k: int, dense: Sequence[float] | None = None
    ) -> RerankOutcome:
        """`dense`: cosines of the texts already known to the caller, used by rerankers that blend them."""
        start = time.perf_counter()

        def done(order: list[tuple[int, float | None]], applied: bool, error: str = "") -> RerankOutcome:
            return RerankOutcome(
                order, applied, self.breaker.state, error, (time.perf_counter() - start) * 1000.0
            )

        if not texts or top_k <= 0:
            return done([], False)
        if not query.strip():
            return done(fallback_order(len(texts), top_k), False, "empty query")
        if not self.breaker.allow():
            log.warning("reranker %s: breaker open, keeping fallback order", self.name)
            return done(fallback_order(len(texts), top_k), False, "circuit open")
        docs = list(texts)
        if dense is not None and getattr(self.inner, "uses_dense_scores", False):
            call: Callable[[], list[tuple[int, float]]] = lambda: self.inner.rerank(  # noqa: E731
                query,
                docs,
                top_k,
                dense=list(dense),  # type: ignore[call-arg]
            )
        else:
            call = lambda: self.inner.rerank(query, docs, top_k)  # noqa: E731
        try:
            result = self._call_with_timeout(call)
            order = _validated(result, len(texts), top_k)
        except Exception as exc:
            self.breaker.record_failure()
            kind = "timeout" if isinstance(exc, RerankTimeout) else type(exc).__name__
            log.warning(
                "reranker %s failed (%s: %s); breaker %s, keeping fallback order",
                self.name,
                kind,
                exc,
                self.breaker.state,
            )
            return done(fallback_order(len(texts), top_k), False, f"{kind}: {exc}")
        self.breaker.record_success()
        return done([(i, s) for i, s in order], True)

    def _call_with_timeout(self, fn: Callable[[], list[tuple[int, float]]]) -> list[tuple[int, float]]:
        with self._lock:
            if self._outstanding >= self.max_outstanding:
                raise RerankTimeout(f"{self._outstanding} earlier calls still hung")
            self._outstanding += 1
        box: dict[str, object] = {}
        finished = threading.Event()

        def run() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # handed to the caller
                box["error"] = exc
            finally:
                with self._lock:
                    self._outstanding -= 1
                finished.set()

        threading.Thread(target=run, name=f"rerank-{self.name}", daemon=True).start()
        if not finished.wait(self.timeout_s):
            raise RerankTimeout(f"no reply within {self.timeout_s:.2f}s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]


def _validated(result: Sequence[tuple[int, float]], count: int, top_k: int) -> list[tuple[int, float]]:
    """A reply must name distinct, in-range indices; anything else is a provider failure."""
    seen: set[int] = set()
    order: list[tuple[int, float]] = []
    for index, score in result:
        if not 0 <= int(index) < count or int(index) in seen:
            raise ValueError(f"reranker returned an invalid index {index}")
        seen.add(int(index))
        order.append((int(index), float(score)))
    if not order and count:
        raise ValueError("reranker returned no results")
    return order[:top_k]
