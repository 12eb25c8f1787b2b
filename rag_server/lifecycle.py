"""Lifecycle types every layer may raise or read: the start-up refusal (one line, exit 2) and the call
lifecycle of a server (calls in flight, draining at shutdown)."""

from __future__ import annotations

import asyncio
import time


class StartupError(RuntimeError):
    """The server must not start (e.g. the served corpus does not match the configured embedder, a port is
    in use, a TLS file cannot be read): the CLI prints it as one line."""


class Lifecycle:
    """Counts in-flight calls; `drain()` makes new calls (health excepted) fail with UNAVAILABLE."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.draining = False
        self.last_call = 0.0  # time.monotonic() of the last call seen (served or refused)
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> None:
        self.in_flight += 1
        self.last_call = time.monotonic()
        self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight <= 0:
            self.in_flight = 0
            self._idle.set()

    def drain(self) -> None:
        self.draining = True

    async def wait_quiet(self, quiet_s: float, timeout: float) -> None:
        """Until no call has arrived for `quiet_s` (calls still queued get their UNAVAILABLE instead of
        being cut by the server's stop), at most `timeout` seconds."""
        ends = time.monotonic() + timeout
        while (now := time.monotonic()) < ends and now - self.last_call < quiet_s:
            await asyncio.sleep(min(quiet_s, ends - now))

    async def wait_idle(self, timeout: float) -> bool:
        """True when no call is in flight within `timeout` seconds."""
        if self._idle.is_set():
            return True
        if timeout <= 0:
            return False
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True
