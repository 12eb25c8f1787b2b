"""The application container: settings plus the parts every servicer shares, built once at start."""

from __future__ import annotations

import logging
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

    async def start(self) -> None:
        """Open the store and providers; refuse a store built with another embedding model."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
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

    def served_generation(self) -> str:
        manifest = self.store.manifest() if self.store is not None else None
        return manifest.generation if manifest is not None else ""

    async def close(self) -> None:
        if self.traces is not None:
            await self.traces.close()  # drains the pending trace inserts first
            self.traces = None
        if self.store is not None:
            self.store.close()
