"""The application container: settings plus the parts every servicer shares, built once at start."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.config import Settings
from rag_server.vocabulary import Vocabulary, load_vocabulary

if TYPE_CHECKING:
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

    async def start(self) -> None:
        """Open the store and providers; refuse a store built with another embedding model."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        from rag_server.store.startup import open_corpus

        await open_corpus(self)  # embedder + store, model/dims check, sample load into an empty store
        if self.reranker is None:
            from rag_server.providers.rerank import build_reranker

            self.reranker = build_reranker(self.settings, self.embedder)  # None when RAG_RERANKER=none

    async def close(self) -> None:
        if self.store is not None:
            self.store.close()
