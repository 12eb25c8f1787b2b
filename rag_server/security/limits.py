"""Request limits as gates: a token bucket per API key, and a cap on concurrent Ask streams.

Both refuse with RESOURCE_EXHAUSTED carrying a google.rpc.RetryInfo (when to try again) and an ErrorInfo
(reason RATE_LIMITED / STREAM_CAP_REACHED, domain "formulary-rag"). Gates run on the event loop one call at
a time, so the counters need no lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc

from rag_server.call_context import caller_name
from rag_server.request_errors import resource_exhausted

RATE_LIMITED = "RATE_LIMITED"
STREAM_CAP_REACHED = "STREAM_CAP_REACHED"
ASK_METHOD = "/rag.v1.AnswerService/Ask"


class RateLimitGate:
    """A token bucket per caller (the API key's name; one shared bucket while auth is off): `burst` calls
    at once, refilled at `rate_per_s`. Runs after the auth gate, which names the caller."""

    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError("a rate limit needs rate_per_s > 0 and burst >= 1")
        self.rate = rate_per_s
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # caller -> (tokens, when counted)

    def _tokens(self, caller: str, now: float) -> float:
        tokens, stamp = self._buckets.get(caller, (self.burst, now))
        return min(self.burst, tokens + max(0.0, now - stamp) * self.rate)

    def admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        caller = caller_name()
        now = self.clock()
        tokens = self._tokens(caller, now)
        if tokens < 1:
            self._buckets[caller] = (tokens, now)
            wait = (1 - tokens) / self.rate
            who = f"API key {caller!r}" if caller else "callers without a key"
            raise resource_exhausted(
                f"rate limit reached for {who} ({self.rate:g} calls/s, bursts of {self.burst:g}); "
                f"retry in {wait:.3f}s",
                RATE_LIMITED, wait,
                {"method": method, "key": caller, "rate_per_s": f"{self.rate:g}", "burst": f"{self.burst:g}"},
            )
        self._buckets[caller] = (tokens - 1, now)
        return None


class StreamCapGate:
    """At most `max_streams` Ask streams at once, all callers together; a slot is freed by the release
    callback the plumbing runs when the stream ends, whatever its end. The RetryInfo suggests the recent
    average stream length (one second before any stream ended)."""

    def __init__(self, max_streams: int, methods: tuple[str, ...] = (ASK_METHOD,)) -> None:
        if max_streams < 1:
            raise ValueError("a stream cap needs max_streams >= 1")
        self.max_streams = max_streams
        self.methods = frozenset(methods)
        self.open = 0
        self._average_s = 1.0

    def admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> Callable[[], None] | None:
        if method not in self.methods:
            return None
        if self.open >= self.max_streams:
            wait = min(10.0, max(0.1, self._average_s))
            raise resource_exhausted(
                f"{self.open} Ask streams are running, the most this server serves at once; "
                f"retry in {wait:.1f}s",
                STREAM_CAP_REACHED, wait, {"method": method, "max_streams": str(self.max_streams)},
            )
        self.open += 1
        began = time.monotonic()
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self.open -= 1
            self._average_s = 0.8 * self._average_s + 0.2 * (time.monotonic() - began)

        return release
