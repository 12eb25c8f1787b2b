"""Where a call's work runs, decided here and only here: on the event loop when it is cheap, else on the
worker pool with the call's budget.

`schedule(context, executor)` gives a call its `Schedule` (answer.pipeline.Schedule):
* `blocking=True` (a network provider: an LLM understander, generator or judge) goes to the pool;
* anything else is first run on the event loop against the inline views of its Corpus and Providers
  arguments (retrieval.corpus: their store and providers raise NeedsWorker on any use), and, when it
  reached one of them, again from the start on the pool with the real ones. A cached whole section, an
  indication keyword lookup or the offline reading never pays a thread hop; nothing blocking ever runs on
  the loop, and nothing partial escapes (inline work has no side effects beyond the corpus's caches).
On the pool the call's Budget (its deadline) travels in a context variable: when the call is cancelled
(client gone, deadline passed, server stopping) the budget is marked cancelled and the work stops at its
next stage (retrieval/timing.checkpoint).
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

from rag_server.answer.pipeline import Schedule
from rag_server.retrieval.corpus import Corpus, NeedsWorker, Providers
from rag_server.retrieval.timing import Budget, current_budget

T = TypeVar("T")


def budget_for(context: grpc.aio.ServicerContext[Any, Any]) -> Budget:
    remaining = context.time_remaining()
    deadline = time.monotonic() + remaining if remaining is not None else None
    return Budget(deadline=deadline)


async def run_blocking(
    context: grpc.aio.ServicerContext[Any, Any], executor: Executor | None, fn: Callable[..., T], *args: Any
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


def _inline(arg: Any) -> Any:
    return arg.inline() if isinstance(arg, Corpus | Providers) else arg


async def run(
    context: grpc.aio.ServicerContext[Any, Any], executor: Executor | None, fn: Callable[..., T], *args: Any,
    blocking: bool = False, try_inline: bool = True,
) -> T:
    """`fn(*args)` where it belongs (see the module doc)."""
    if not blocking and try_inline:
        try:
            return fn(*(_inline(a) for a in args))
        except NeedsWorker:
            pass
    return await run_blocking(context, executor, fn, *args)


def schedule(context: grpc.aio.ServicerContext[Any, Any], executor: Executor | None,
             try_inline: bool = True) -> Schedule:
    """The Schedule of one call (its work on the loop or the pool, with its budget)."""

    async def scheduled(fn: Callable[..., T], *args: Any, blocking: bool = False) -> T:
        return await run(context, executor, fn, *args, blocking=blocking, try_inline=try_inline)

    return scheduled
