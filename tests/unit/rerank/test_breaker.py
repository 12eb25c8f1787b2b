"""Reranker circuit breaker (fake clock) and the guard: timeout on a really slow reranker, fallback order."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from rag_server.providers.base import RerankDoc
from rag_server.providers.rerank import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    CircuitBreaker,
    GuardedReranker,
    RerankFailure,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """A reranker that reverses the order, or fails while `fail` is set."""

    name = "scripted"
    uses_dense_scores = False
    local = False

    def __init__(self) -> None:
        self.fail = False
        self.calls = 0

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("provider down")
        return [(i, float(i)) for i in reversed(range(len(docs)))][:top_k]


class Slow:
    name = "slow"
    uses_dense_scores = False
    local = False

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.released = threading.Event()

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        self.released.wait(self.seconds)
        return [(0, 1.0)]


TEXTS = [RerankDoc(t) for t in ("a", "b", "c", "d")]


def test_opens_after_consecutive_failures_half_opens_after_cooldown_and_closes_on_success() -> None:
    clock = Clock()
    inner = Scripted()
    guard = GuardedReranker(inner, timeout_s=1.0, breaker=CircuitBreaker(3, 30.0, clock=clock))
    assert guard.rerank_guarded("q", TEXTS, 3).order == [(3, 3.0), (2, 2.0), (1, 1.0)]
    inner.fail = True
    for expected_state in (CLOSED, CLOSED, OPEN):
        out = guard.rerank_guarded("q", TEXTS, 3)
        assert not out.applied and out.order == [
            (0, None),
            (1, None),
            (2, None),
        ]  # fallback order, top_k kept
        assert out.state == expected_state
    calls = inner.calls
    out = guard.rerank_guarded("q", TEXTS, 2)  # open: the provider is not called at all
    assert (
        inner.calls == calls
        and out.failure == RerankFailure.CIRCUIT_OPEN
        and out.order == [(0, None), (1, None)]
    )
    clock.now += 29.9
    assert guard.state == OPEN
    clock.now += 0.2
    assert guard.state == HALF_OPEN
    inner.fail = False
    out = guard.rerank_guarded("q", TEXTS, 2)
    assert out.applied and out.state == CLOSED and out.order == [(3, 3.0), (2, 2.0)]


def test_half_open_failure_reopens_for_a_full_cooldown() -> None:
    clock = Clock()
    inner = Scripted()
    breaker = CircuitBreaker(2, 10.0, clock=clock)
    guard = GuardedReranker(inner, timeout_s=1.0, breaker=breaker)
    inner.fail = True
    guard.rerank_guarded("q", TEXTS, 2)
    guard.rerank_guarded("q", TEXTS, 2)
    assert breaker.state == OPEN
    clock.now += 10.0
    assert breaker.state == HALF_OPEN
    assert guard.rerank_guarded("q", TEXTS, 2).state == OPEN  # the trial failed
    clock.now += 9.0
    assert breaker.state == OPEN


def test_half_open_lets_one_trial_through() -> None:
    clock = Clock()
    breaker = CircuitBreaker(1, 5.0, clock=clock)
    breaker.record_failure()
    clock.now += 5.0
    assert breaker.allow() is True
    assert breaker.allow() is False  # a second caller during the trial keeps the fallback
    breaker.record_success()
    assert breaker.state == CLOSED and breaker.allow()


def test_a_hung_provider_times_out_and_cannot_block_the_request() -> None:
    slow = Slow(seconds=5.0)
    guard = GuardedReranker(slow, timeout_s=0.2, breaker=CircuitBreaker(2, 60.0))
    try:
        start = time.perf_counter()
        out = guard.rerank_guarded("q", TEXTS, 3)
        elapsed = time.perf_counter() - start
        assert elapsed < 2.0
        assert not out.applied and out.failure == RerankFailure.TIMEOUT
        assert out.order == [(0, None), (1, None), (2, None)]
        guard.rerank_guarded("q", TEXTS, 3)
        assert guard.state == OPEN
    finally:
        slow.released.set()


def test_invalid_replies_count_as_failures() -> None:
    class Bad:
        name = "bad"
        uses_dense_scores = False
        local = False

        def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
            return [(7, 1.0)]

    guard = GuardedReranker(Bad(), timeout_s=1.0, breaker=CircuitBreaker(1, 60.0))
    out = guard.rerank_guarded("q", TEXTS, 2)
    assert not out.applied and out.state == OPEN and out.failure == RerankFailure.INVALID_REPLY


def test_protocol_method_returns_fallback_positions() -> None:
    inner = Scripted()
    inner.fail = True
    guard = GuardedReranker(inner, timeout_s=1.0, breaker=CircuitBreaker(5, 60.0))
    assert guard.rerank("q", TEXTS, 2) == [(0, 0.0), (1, 0.0)]


@pytest.mark.parametrize("failures", [0, -1])
def test_breaker_needs_a_positive_threshold(failures: int) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(failures, 1.0)


def test_a_local_reranker_runs_in_the_calling_thread_and_still_trips_the_breaker() -> None:
    class Local:
        name = "local"
        uses_dense_scores = False
        local = True

        def __init__(self) -> None:
            self.threads: list[str] = []
            self.fail = False

        def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
            self.threads.append(threading.current_thread().name)
            if self.fail:
                raise RuntimeError("bad")
            return [(1, 1.0), (0, 0.5)][:top_k]

    inner = Local()
    guard = GuardedReranker(inner, timeout_s=1.0, breaker=CircuitBreaker(1, 60.0))
    assert guard.rerank_guarded("q", TEXTS[:2], 2).order == [(1, 1.0), (0, 0.5)]
    assert inner.threads == [threading.current_thread().name]
    inner.fail = True
    out = guard.rerank_guarded("q", TEXTS[:2], 2)
    assert not out.applied and out.failure == RerankFailure.PROVIDER_ERROR and out.state == OPEN
