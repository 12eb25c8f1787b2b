"""The application container: settings plus the parts every servicer shares, built once at start.

Lifetimes: the Language (vocabularies) and providers live as long as the process; the Retriever lives as
long as its served generation: built at start, rebuilt and swapped in one assignment when an ingest
switches generations (`refresh`), and checked against the store's generation on every use.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.config import Settings
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.retriever import Retriever
from rag_server.vocabulary.language import Language, load_language
from rag_server.vocabulary.sections import Vocabulary

if TYPE_CHECKING:
    from rag_server.answer.factory import AnswerParts
    from rag_server.persistence.audit_store import AuditWriter
    from rag_server.persistence.recorder import TraceRecorder
    from rag_server.providers.base import Embedder, Reranker
    from rag_server.store.base import Store

log = logging.getLogger("rag_server")


@dataclass
class App:
    settings: Settings
    language: Language = field(default_factory=load_language)
    store: Store | None = None
    embedder: Embedder | None = None
    reranker: Reranker | None = None
    traces: TraceRecorder | None = None  # set when RAG_DATABASE_URL is set and the database answered
    executor: ThreadPoolExecutor | None = None  # the worker pool of blocking call work (RAG_MAX_WORKERS)
    answers: AnswerParts | None = None  # understander, generator, judge, memory of AnswerService/Ask
    audit: AuditWriter | None = None  # the audit chain of Retrieve and Ask calls (RAG_AUDIT, on by default)
    _retriever: Retriever | None = field(default=None, repr=False)
    _building: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def vocabulary(self) -> Vocabulary:
        return self.language.vocabulary

    async def start(self) -> None:
        """Open the store and providers (refusing a store built with another embedding model), then build
        the Retriever of the served generation before the first request."""
        from rag_server.extras import check_extras

        check_extras(self.settings)  # one line naming a missing provider extra, before anything opens
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        if self.executor is None:
            self.executor = ThreadPoolExecutor(self.settings.max_workers, thread_name_prefix="rag-work")
        from rag_server.startup import open_corpus

        await open_corpus(self)  # embedder + store, model/dims check, sample load into an empty store
        if self.reranker is None:
            from rag_server.providers.rerank import build_reranker

            # None when RAG_RERANKER=none
            self.reranker = build_reranker(self.settings, self.embedder, self.language)
        dsn = self.settings.database_url.get_secret_value() if self.settings.database_url else ""
        if dsn and self.traces is None:
            from rag_server.persistence.recorder import open_recorder

            # Fail-open: an unreachable database logs a warning and leaves self.traces None.
            self.traces = await open_recorder(dsn, generation=self.served_generation)
        if self.answers is None:
            from rag_server.answer.factory import build_answer_parts

            self.answers = build_answer_parts(self.settings, self.language, self.traces)
        if self.audit is None and self.settings.audit:
            from rag_server.persistence.audit_store import open_audit

            self.audit = open_audit(self.settings, self.embedder, self.reranker, self.answers)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.executor, self.refresh)
        # Models the first requests would otherwise load, in the background (serving starts now).
        loop.run_in_executor(self.executor, self._warm)

    def retriever(self) -> Retriever:
        """The Retriever of the generation the store serves now (rebuilt only when that changed)."""
        current = self._retriever
        served = self.served_generation()
        if current is not None and current.generation == served and current.store is self.store:
            return current
        return self.refresh()

    def refresh(self) -> Retriever:
        """Build the Retriever of the served generation and swap it in (one assignment: calls already
        running keep the one they started with)."""
        assert self.store is not None, "the store is not open"
        with self._building:
            current = self._retriever
            if current is not None and current.generation == self.served_generation():
                return current
            built = Retriever.build(
                self.store,
                self.language,
                EvidencePolicy.from_settings(self.settings),
                self.embedder,
                self.reranker,
            )
            self._retriever = built
            log.info("serving generation %s", built.generation or "(none)")
            return built

    def _warm(self) -> None:
        """The word segmenter and the embedding model (a cold free-form request once tripped the reranker
        timeout)."""
        from rag_server.text import bm25

        try:
            bm25.query_vector("khởi động tách từ")
            if self.embedder is not None:
                self.embedder.embed(["khởi động mô hình"], "query")
        except Exception:  # a failing provider shows up on the first real request instead
            log.exception("warm-up failed")

    def served_generation(self) -> str:
        manifest = self.store.manifest() if self.store is not None else None
        return manifest.generation if manifest is not None else ""

    async def close(self) -> None:
        if self.audit is not None:
            await self.audit.close()  # drains the queued audit records first
            self.audit = None
        if self.traces is not None:
            await self.traces.close()  # drains the pending trace inserts first
            self.traces = None
        if self.store is not None:
            self.store.close()
        if self.executor is not None:
            # Work still running belongs to calls that were cancelled: it stops at its next stage.
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.executor = None
