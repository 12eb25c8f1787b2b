"""Where a call's work runs: on the event loop when it is cheap, else on the worker pool with its budget.

`run_blocking(context, fn, *args)` hands `fn` to the worker pool (RAG_MAX_WORKERS threads) with a Budget
holding the call's deadline; when the call is cancelled (client gone, deadline passed, server stopping)
the budget is marked cancelled and the work stops at its next stage (retrieval/timing.checkpoint).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

import grpc

from rag_server.retrieval.inline import NeedsWorker, inline
from rag_server.retrieval.timing import Budget, current_budget

T = TypeVar("T")


def budget_for(context: grpc.aio.ServicerContext[Any, Any]) -> Budget:
    remaining = context.time_remaining()
    deadline = time.monotonic() + remaining if remaining is not None else None
    return Budget(deadline=deadline)


async def run_blocking(
    context: grpc.aio.ServicerContext[Any, Any],
    executor: Executor | None,
    fn: Callable[..., T],
    *args: Any,
) -> T:
    budget = budget_for(context)
    token = current_budget.set(budget)
    try:
        call = functools.partial(contextvars.copy_context().run, fn, *args)
        return await asyncio.get_running_loop().run_in_executor(executor, call)
    except asyncio.CancelledError:
        budget.cancelled = True
        raise
    finally:
        current_budget.reset(token)


async def run_cheap_first(
    context: grpc.aio.ServicerContext[Any, Any],
    executor: Executor | None,
    fn: Callable[..., T],
    *args: Any,
    try_inline: bool = True,
) -> T:
    """`fn(*args)` on the event loop when it needs no blocking work, else (at its first store or provider
    call, retrieval/inline.py) again from the start on the worker pool. A thread hop costs more than a
    cached section or an indication keyword lookup; `try_inline=False` goes straight to the pool."""
    if try_inline:
        try:
            with inline():
                return fn(*args)
        except NeedsWorker:
            pass
    return await run_blocking(context, executor, fn, *args)
