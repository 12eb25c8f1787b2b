"""A circuit breaker for the reranker (seed 004).

closed: calls go through; `failures` consecutive failures open it.
open: calls are refused (the caller keeps its fallback order) until `cooldown_s` has passed.
half_open: one trial call goes through; success closes the breaker, failure opens it again.
The clock is injectable so tests drive time explicitly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum


class BreakerState(StrEnum):
    """Where the circuit breaker stands (reported as RetrieveResponse.reranker_state)."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"
    DISABLED = "disabled"  # no reranker configured


CLOSED, OPEN, HALF_OPEN = BreakerState.CLOSED, BreakerState.OPEN, BreakerState.HALF_OPEN


class CircuitBreaker:
    def __init__(self, failures: int, cooldown_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if failures < 1:
            raise ValueError("failures must be >= 1")
        self.failure_threshold = failures
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state: BreakerState = CLOSED
        self._consecutive = 0
        self._opened_at = 0.0
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._current()

    @property
    def consecutive_failures(self) -> int:
        with self._lock:
            return self._consecutive

    def _current(self) -> BreakerState:
        if self._state == OPEN and self._clock() - self._opened_at >= self.cooldown_s:
            self._state = HALF_OPEN
            self._trial_in_flight = False
        return self._state

    def allow(self) -> bool:
        """May a call go through now? In half_open only one trial call is let through at a time."""
        with self._lock:
            state = self._current()
            if state == CLOSED:
                return True
            if state == HALF_OPEN and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._state = CLOSED
            self._consecutive = 0
            self._trial_in_flight = False

    def record_failure(self) -> None:
        with self._lock:
            self._consecutive += 1
            if self._state == HALF_OPEN or self._consecutive >= self.failure_threshold:
                self._state = OPEN
                self._opened_at = self._clock()
            self._trial_in_flight = False
