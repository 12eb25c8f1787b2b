"""Where work runs is decided where it is scheduled (api/work.py): an inline attempt against the corpus's
inline views, the worker pool when it reaches the store or a provider, straight to the pool when blocking."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rag_server.api.work import run
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.vocabulary.language import load_language


class _Context:
    def time_remaining(self) -> float | None:
        return None


class _Store:
    def manifest(self) -> None:
        return None


def _corpus() -> Corpus:
    return Corpus(_Store(), load_language(), EvidencePolicy.defaults())  # type: ignore[arg-type]


def _where(corpus: Corpus, touch: bool) -> Any:
    if touch:
        corpus.store.manifest()
    return threading.current_thread().name


async def test_cheap_work_runs_on_the_event_loop() -> None:
    with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
        assert await run(_Context(), pool, _where, _corpus(), False) == threading.current_thread().name  # type: ignore[arg-type]


async def test_store_work_moves_to_the_pool() -> None:
    with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
        assert (await run(_Context(), pool, _where, _corpus(), True)).startswith("pool")  # type: ignore[arg-type]


async def test_blocking_work_goes_straight_to_the_pool() -> None:
    with ThreadPoolExecutor(1, thread_name_prefix="pool") as pool:
        got = await run(_Context(), pool, _where, _corpus(), False, blocking=True)  # type: ignore[arg-type]
        assert got.startswith("pool")


def test_inline_providers_refuse_blocking_calls() -> None:
    class _Embedder:
        model, dims = "m", 2

        def embed(self, texts: Any, kind: Any) -> list[list[float]]:
            raise AssertionError("reached")

    inline = Providers(_Embedder()).inline()  # type: ignore[arg-type]
    try:
        assert inline.embedder is not None
        inline.embedder.embed(["x"], "query")
    except Exception as exc:
        assert type(exc).__name__ == "NeedsWorker"
    else:
        raise AssertionError("no NeedsWorker")
