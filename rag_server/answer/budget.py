"""The request budget of one Ask: provider calls and wall time, bounded by the client's deadline. A call
that would exceed it ends the answer with request_budget_exhausted instead of starting."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


class BudgetExhausted(Exception):
    """The request budget is spent."""


@dataclass
class RequestBudget:
    max_calls: int
    deadline: float  # time.monotonic()
    calls: int = 0
    spent: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, max_calls: int, seconds: float, client_remaining: float | None) -> RequestBudget:
        allowed = seconds if client_remaining is None else min(seconds, client_remaining)
        return cls(max_calls, time.monotonic() + max(0.0, allowed))

    def spend(self, what: str) -> None:
        """Before a provider call: count it, or raise BudgetExhausted."""
        if self.calls >= self.max_calls:
            raise BudgetExhausted(f"{self.max_calls} provider calls used")
        if time.monotonic() >= self.deadline:
            raise BudgetExhausted("time is up")
        self.calls += 1
        self.spent.append(what)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())
