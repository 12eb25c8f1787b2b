"""GuardedReranker: timeout + circuit breaker around any Reranker (seed 004).

A `local` reranker (the offline one: in-process, bounded work) is called directly; its failures still
count for the breaker and keep the fallback order. A hosted one runs under the timeout below.

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
from enum import StrEnum
from typing import Protocol

from rag_server.providers.base import RerankDoc, Reranker
from rag_server.providers.rerank.breaker import BreakerState, CircuitBreaker

log = logging.getLogger("rag_server.rerank")

DISABLED = BreakerState.DISABLED


class RerankFailure(StrEnum):
    """Why a rerank fell back to the incoming order."""

    NONE = ""
    EMPTY_QUERY = "empty_query"
    CIRCUIT_OPEN = "circuit_open"
    TIMEOUT = "timeout"
    PROVIDER_ERROR = "provider_error"
    INVALID_REPLY = "invalid_reply"


@dataclass(frozen=True)
class RerankOutcome:
    """order: (index into texts, score or None) best first; scores are None when the fallback was used."""

    order: list[tuple[int, float | None]]
    applied: bool
    state: BreakerState  # breaker state after the call
    failure: RerankFailure = RerankFailure.NONE
    error: str = ""
    millis: float = 0.0


class Ranker(Protocol):
    """What retrieval calls to order candidates: it never raises, and says whether its order was used."""

    name: str
    uses_dense_scores: bool
    local: bool

    @property
    def state(self) -> BreakerState: ...

    def rerank_guarded(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> RerankOutcome: ...


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
        self.uses_dense_scores = inner.uses_dense_scores
        self.local = inner.local
        self.timeout_s = timeout_s
        self.breaker = breaker
        self.max_outstanding = max_outstanding
        self._outstanding = 0
        self._lock = threading.Lock()

    @property
    def state(self) -> BreakerState:
        return self.breaker.state

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        """The Reranker protocol: fallback positions get score 0.0 (use `rerank_guarded` to tell)."""
        outcome = self.rerank_guarded(query, docs, top_k)
        return [(i, s if s is not None else 0.0) for i, s in outcome.order]

    def rerank_guarded(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> RerankOutcome:
        """The inner reranker's order within the timeout, else the incoming (fallback) order."""
        start = time.perf_counter()

        def done(
            order: list[tuple[int, float | None]],
            applied: bool,
            failure: RerankFailure = RerankFailure.NONE,
            error: str = "",
        ) -> RerankOutcome:
            millis = (time.perf_counter() - start) * 1000.0
            return RerankOutcome(order, applied, self.breaker.state, failure, error, millis)

        if not docs or top_k <= 0:
            return done([], False)
        if not query.strip():
            return done(fallback_order(len(docs), top_k), False, RerankFailure.EMPTY_QUERY)
        if not self.breaker.allow():
            log.warning("reranker %s: breaker open, keeping fallback order", self.name)
            return done(fallback_order(len(docs), top_k), False, RerankFailure.CIRCUIT_OPEN)
        given = list(docs)
        try:
            if self.inner.local:  # in-process and bounded: a timeout thread would cost more than the call
                result = self.inner.rerank(query, given, top_k)
            else:
                result = self._call_with_timeout(lambda: self.inner.rerank(query, given, top_k))
        except Exception as exc:
            self.breaker.record_failure()
            timed_out = isinstance(exc, RerankTimeout)
            failure = RerankFailure.TIMEOUT if timed_out else RerankFailure.PROVIDER_ERROR
            log.warning("reranker %s failed (%s: %s); breaker %s, keeping fallback order",
                        self.name, failure.value, exc, self.breaker.state.value)
            return done(fallback_order(len(docs), top_k), False, failure, f"{type(exc).__name__}: {exc}")
        try:
            order = _validated(result, len(docs), top_k)
        except ValueError as exc:
            self.breaker.record_failure()
            log.warning("reranker %s replied badly (%s); keeping fallback order", self.name, exc)
            return done(fallback_order(len(docs), top_k), False, RerankFailure.INVALID_REPLY, str(exc))
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
