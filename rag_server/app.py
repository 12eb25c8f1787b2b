"""The application: settings plus the parts every servicer shares, composed once at start.

Lifetimes: the Language (vocabularies) and the providers live as long as the process; the Corpus lives as
long as its served generation (retrieval/corpus.py). The one place a Corpus is swapped is `CorpusHolder`:
built off the event loop at start, rebuilt and swapped in one assignment when an ingest switches generations
(`refresh`), and, for a store another process may switch (a Qdrant server shared by replicas), by a
background watch of the served generation. An RPC reads `app.corpus` (an attribute, no I/O): the watch is
never an RPC's cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.config import Settings
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.vocabulary.language import Language, load_language
from rag_server.vocabulary.sections import Vocabulary

if TYPE_CHECKING:
    from pathlib import Path

    from rag_server.answer.factory import AnswerParts
    from rag_server.observability import Observability
    from rag_server.persistence.audit_store import AuditWriter
    from rag_server.persistence.recorder import TraceRecorder
    from rag_server.providers.base import Embedder
    from rag_server.providers.rerank.guarded import Ranker
    from rag_server.role import Role
    from rag_server.store.base import Store

log = logging.getLogger("rag_server")
FOLLOW_S = 2.0  # how often a follower worker checks the served generation when RAG_GENERATION_WATCH_S=0


class CorpusHolder:
    """The served Corpus, swapped in one assignment (calls already running keep the one they started with)."""

    def __init__(self, store: Store, language: Language, policy: EvidencePolicy) -> None:
        self.store = store
        self.language = language
        self.policy = policy
        self._lock = threading.Lock()
        self.current = Corpus(store, language, policy)  # nothing served until the first refresh

    def served_generation(self) -> str:
        """Blocking (a store call; a follower of another process's store catches up with it first)."""
        follow = getattr(self.store, "follow", None)
        if follow is not None:
            follow()
        manifest = self.store.manifest()
        return manifest.generation if manifest is not None else ""

    def refresh(self) -> Corpus:
        """Build the Corpus of the generation the store serves now, when that changed (blocking)."""
        with self._lock:
            served = self.served_generation()
            current = self.current
            if current.manifest is not None and current.generation == served:
                return current
            built = Corpus.build(self.store, self.language, self.policy)
            self.current = built
            log.info("serving generation %s", built.generation or "(none)")
            return built

    async def watch(self, interval_s: float, executor: ThreadPoolExecutor | None) -> None:
        """Until cancelled: every interval, the served generation checked on the worker pool and its Corpus
        built there when another process switched it."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval_s)
            try:
                await loop.run_in_executor(executor, self.refresh)
            except Exception:  # a store that cannot be read now is read again at the next interval
                log.warning("generation watch: the store could not be read", exc_info=True)


@dataclass
class App:
    settings: Settings
    language: Language = field(default_factory=load_language)
    store: Store | None = None
    embedder: Embedder | None = None
    reranker: Ranker | None = None
    traces: TraceRecorder | None = None  # set when RAG_DATABASE_URL is set and the database answered
    executor: ThreadPoolExecutor | None = None  # the worker pool of blocking call work (RAG_MAX_WORKERS)
    answers: AnswerParts | None = None  # understander, generator, judge, memory of AnswerService/Ask
    audit: AuditWriter | None = None  # the audit chain of Retrieve and Ask calls (RAG_AUDIT, on by default)
    holder: CorpusHolder | None = None
    role: Role | None = None  # which worker of `serve --workers` this is (None: the one process)
    _watch: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def vocabulary(self) -> Vocabulary:
        return self.language.vocabulary

    @property
    def corpus(self) -> Corpus:
        """The Corpus served now (no I/O)."""
        assert self.holder is not None, "the app was not started"
        return self.holder.current

    @property
    def providers(self) -> Providers:
        return Providers(self.embedder, self.reranker)

    @property
    def follower_dir(self) -> Path | None:
        """Where a follower worker keeps its copy of the embedded store's served generation (None: this
        process owns the store, or the store is a server every worker opens)."""
        if self.role is None or self.role.owner or self.settings.store != "edge":
            return None
        return self.role.follower_dir(self.settings.store_dir)

    @property
    def owns_ingestion(self) -> bool:
        """This process loads the sample, ingests and switches (the one process, or worker 0)."""
        return self.role is None or self.role.owner

    async def start(self, observability: Observability | None = None) -> None:
        """Compose the app: open the store and providers (refusing a store built with another embedding
        model; a follower worker opens its copy of the store the owner writes), handing each to
        `observability` to wrap (timed) before anything is built on it, then build the Corpus of the served
        generation before the first request, and watch the generation. Parts given to the App are used as
        they are (and timed when `observability` measures), never rebuilt."""
        from rag_server.extras import check_extras

        check_extras(self.settings)  # one line naming a missing provider extra, before anything opens
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        if self.executor is None:
            self.executor = ThreadPoolExecutor(self.settings.max_workers, thread_name_prefix="rag-work")
        from rag_server.providers.factory import build_embedder
        from rag_server.startup import open_corpus
        from rag_server.store.factory import open_store

        embedder = self.embedder if self.embedder is not None else build_embedder(self.settings)
        if self.store is not None:
            store = self.store
        else:  # a follower worker reads the owner's store through its own copy (store/follower.py)
            store = await asyncio.to_thread(open_store, self.settings, None, self.follower_dir)
        if observability is not None:  # the sample load below and everything built on them is timed too
            embedder, store = observability.timed_embedder(embedder), observability.timed_store(store)
        # model/dims check (the store closed on a mismatch), sample load into an empty store (the owner's)
        await open_corpus(self.settings, embedder, store,
                          load_sample=self.settings.load_sample_on_start and self.owns_ingestion)
        self.embedder, self.store = embedder, store
        if self.reranker is None:
            from rag_server.providers.rerank import build_reranker

            # None when RAG_RERANKER=none; the provider inside the guard timed
            wrap = observability.timed_reranker if observability is not None else None
            self.reranker = build_reranker(self.settings, self.embedder, self.language, wrap=wrap)
        dsn = self.settings.database_url.get_secret_value() if self.settings.database_url else ""
        if dsn and self.traces is None:
            from rag_server.persistence.recorder import open_recorder

            # Fail-open: an unreachable database logs a warning and leaves self.traces None.
            self.traces = await open_recorder(dsn, generation=lambda: self.corpus.generation)
        if self.answers is None:
            from rag_server.answer.factory import build_answer_parts

            # the workers of `serve --workers` share conversation memory (a SQLite file) when no database
            shared = self.role.conversations if self.role is not None and self.role.count > 1 else None
            parts = build_answer_parts(self.settings, self.language, self.traces, shared)
            if observability is not None:
                parts = dataclasses.replace(
                    parts,
                    understander=observability.timed_part(parts.understander, "understander", "understand"),
                    generator=observability.timed_part(parts.generator, "generator", "generate"),
                    judge=observability.timed_part(parts.judge, "judge", "judge"),
                )
            self.answers = parts
        if self.audit is None and self.settings.audit:
            from rag_server.persistence.audit_store import open_audit

            self.audit = open_audit(self.settings, self.embedder, self.reranker, self.answers)
        if observability is not None:
            observability.watch(reranker=lambda: self.reranker, audit=lambda: self.audit)
        self.holder = CorpusHolder(self.store, self.language, EvidencePolicy.from_settings(self.settings))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.executor, self.holder.refresh)
        watch_s = self.settings.generation_watch_s
        if watch_s <= 0 and not self.owns_ingestion:
            watch_s = FOLLOW_S  # a follower sees the owner's switches only by watching
        if watch_s > 0:
            self._watch = asyncio.create_task(self.holder.watch(watch_s, self.executor))
        # Models the first requests would otherwise load, in the background (serving starts now).
        loop.run_in_executor(self.executor, self._warm)

    def refresh(self) -> Corpus:
        """Build and serve the Corpus of the store's generation now (blocking: after an ingest switched)."""
        assert self.holder is not None, "the app was not started"
        return self.holder.refresh()

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

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
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
