"""Per-stage timings carried by every response (printed by benchmarks, never asserted in tests)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Timings:
    stages: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
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
