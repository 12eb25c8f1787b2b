"""The application container: settings plus the parts every servicer shares, built once at start."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.config import Settings
from rag_server.vocabulary import Vocabulary, load_vocabulary

if TYPE_CHECKING:
    from rag_server.persistence.recorder import TraceRecorder
    from rag_server.providers.base import Embedder, Reranker
    from rag_server.store.base import Store

log = logging.getLogger("rag_server")


@dataclass
class App:
    settings: Settings
    vocabulary: Vocabulary = field(default_factory=load_vocabulary)
    store: Store | None = None
    embedder: Embedder | None = None
    reranker: Reranker | None = None
    traces: TraceRecorder | None = None  # set when RAG_DATABASE_URL is set and the database answered
    executor: ThreadPoolExecutor | None = None  # the worker pool of blocking call work (RAG_MAX_WORKERS)

    async def start(self) -> None:
        """Open the store and providers; refuse a store built with another embedding model."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        if self.executor is None:
            self.executor = ThreadPoolExecutor(self.settings.max_workers, thread_name_prefix="rag-work")
        from rag_server.store.startup import open_corpus

        await open_corpus(self)  # embedder + store, model/dims check, sample load into an empty store
        if self.reranker is None:
            from rag_server.providers.rerank import build_reranker

            self.reranker = build_reranker(self.settings, self.embedder)  # None when RAG_RERANKER=none
        dsn = self.settings.database_url.get_secret_value() if self.settings.database_url else ""
        if dsn and self.traces is None:
            from rag_server.persistence.recorder import open_recorder

            # Fail-open: an unreachable database logs a warning and leaves self.traces None.
            self.traces = await open_recorder(dsn, generation=self.served_generation)
        # Load what the first requests would otherwise pay for, in the background (serving starts now).
        asyncio.get_running_loop().run_in_executor(self.executor, self._warm)

    def _warm(self) -> None:
        """The catalog, the word segmenter and the embedding model (a cold free-form request once tripped
        the reranker timeout)."""
        from rag_server.retrieval.service import retriever_for
        from rag_server.text import bm25

        try:
            retriever_for(self).catalog()
            bm25.query_vector("khởi động tách từ")
            if self.embedder is not None:
                self.embedder.embed(["khởi động mô hình"], "query")
        except Exception:  # a failing store shows up on the first real request instead
            log.exception("warm-up failed")

    def served_generation(self) -> str:
        manifest = self.store.manifest() if self.store is not None else None
        return manifest.generation if manifest is not None else ""

    async def close(self) -> None:
        if self.traces is not None:
            await self.traces.close()  # drains the pending trace inserts first
            self.traces = None
        if self.store is not None:
            self.store.close()
        if self.executor is not None:
            # Work still running belongs to calls that were cancelled: it stops at its next stage.
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.executor = None
