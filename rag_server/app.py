"""The application container: settings plus the parts every servicer shares, built once at start."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from rag_server.config import Settings
from rag_server.vocabulary import Vocabulary, load_vocabulary

log = logging.getLogger("rag_server")


@dataclass
class App:
    settings: Settings
    vocabulary: Vocabulary = field(default_factory=load_vocabulary)
    # Filled in by start(): the store, providers and retrieval engine (see rag_server/wiring.py).
    parts: dict[str, Any] = field(default_factory=dict)

    async def start(self) -> None:
        """Open the store and providers; refuse a store built with another embedding model."""
        self.settings.data_dir.mkdir(parents=True, exist_ok=True)

    async def close(self) -> None:
        for part in self.parts.values():
            close = getattr(part, "close", None)
            if callable(close):
                close()
