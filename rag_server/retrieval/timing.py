"""Per-stage timings carried by every response (printed by benchmarks, never asserted in tests), and the
work budget checked between stages: a cancelled call or an expired deadline stops the server-side work at
the next stage instead of running on for a client that has gone.

The budget travels in a context variable: a servicer sets it before handing the blocking work to a worker
thread (asyncio.to_thread copies the context), and marks it cancelled when its call is cancelled.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


class WorkCancelled(Exception):
    """The call was cancelled or its deadline passed: the remaining stages are skipped."""

    def __init__(self, message: str, expired: bool) -> None:
        super().__init__(message)
        self.expired = expired


@dataclass
class Budget:
    """When the work of one call must stop: its deadline (time.monotonic) and whether it was cancelled."""

    deadline: float | None = None
    cancelled: bool = False

    def check(self, stage: str) -> None:
        if self.cancelled:
            raise WorkCancelled(f"call cancelled before stage {stage}", expired=False)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise WorkCancelled(f"deadline passed before stage {stage}", expired=True)


current_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("work_budget", default=None)


def checkpoint(stage: str) -> None:
    """Raise WorkCancelled when the current call's budget is spent (a no-op outside a call)."""
    budget = current_budget.get()
    if budget is not None:
        budget.check(stage)


@dataclass
class Timings:
    stages: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        checkpoint(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1000.0)

    def add(self, name: str, millis: float) -> None:
        """Record a stage; a repeated stage name accumulates (one row per stage)."""
        for i, (existing, total) in enumerate(self.stages):
            if existing == name:
                self.stages[i] = (name, total + millis)
                return
        self.stages.append((name, millis))

    def extend(self, other: Timings) -> None:
        for name, millis in other.stages:
            self.add(name, millis)
