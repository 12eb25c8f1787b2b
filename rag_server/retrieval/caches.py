"""The Retriever's caches, all living exactly as long as its generation (so never stale):

* `QueryVectors`: query embeddings by normalised text (text.normalize.canonical: NFC, lower case, single
  spaces): the same question asked again, or by many clients, is embedded once;
* `Lru`: the whole sections already looked up (section.py), so a hot section is one dictionary lookup.

Bounded LRU; thread-safe (the worker pool and the event loop share them). Size 0 disables a cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from rag_server.text.normalize import canonical

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Lru(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The cached value, or `make()` (run outside the lock; two racing callers may both make it)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
        value = make()
        with self._lock:
            self.misses += 1
            if self.size > 0:
                self._items[key] = value
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return value

    def peek(self, key: K) -> V | None:
        """The cached value without making it (None when absent)."""
        with self._lock:
            return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)


class QueryVectors:
    def __init__(self, size: int) -> None:
        self._vectors: Lru[str, list[float]] = Lru(size)

    @property
    def hits(self) -> int:
        return self._vectors.hits

    @property
    def misses(self) -> int:
        return self._vectors.misses

    def get(self, text: str, embed: Callable[[], list[float]]) -> list[float]:
        """The vector of `text` (by normalised text), made by `embed()` when it is not cached."""
        return self._vectors.get_or_make(canonical(text), embed)
