"""Query embeddings cached by normalised text (NFKC, lower case, single spaces): the same question asked
again, or asked by many clients, is embedded once. Bounded LRU; thread-safe."""

from __future__ import annotations

import threading
import unicodedata
from collections import OrderedDict

from rag_server.providers.base import Embedder

DEFAULT_SIZE = 2048


def normalised(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


class QueryVectors:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, text: str, embedder: Embedder) -> list[float]:
        key = normalised(text)
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return vector
        vector = embedder.embed([text], "query")[0]
        with self._lock:
            self.misses += 1
            if self.size > 0:
                self._vectors[key] = vector
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        return vector
