"""Replies built once per served generation.

The same request on the same generation gets the same reply, timings excepted: a hot section, a repeated
section question or indication is answered by copying the reply already built (a few microseconds)
instead of understanding, looking up and converting it again. Only replies computed without a provider
whose answer can vary (the reranker's breaker, a hosted embedder's failure) are kept: the servicer decides
with `cacheable`. Keys are the exact request fields (a reply echoes the query). A new generation starts an
empty cache; the size is RAG_REPLY_CACHE_SIZE (0: off).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import TypeVar

from google.protobuf.message import Message

from rag_server.gen.rag.v1 import common_pb2
from rag_server.retrieval.caches import Lru

M = TypeVar("M", bound=Message)

CACHE_STAGE = "reply_cache"  # the one timing of a reply served from the cache


class ReplyCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._generation = ""
        self._replies: Lru[Hashable, Message] = Lru(size)
        self._lock = threading.Lock()

    def _for(self, generation: str) -> Lru[Hashable, Message] | None:
        if not generation or self.size <= 0:
            return None
        with self._lock:
            if generation != self._generation:
                self._generation, self._replies = generation, Lru(self.size)
            return self._replies

    def get(self, generation: str, key: Hashable, kind: type[M]) -> M | None:
        """A copy of the reply built for `key` on `generation`, with its one timing; None when absent."""
        began = time.perf_counter()
        replies = self._for(generation)
        cached = replies.peek(key) if replies is not None else None
        if cached is None:
            return None
        reply = kind()
        reply.MergeFrom(cached)  # type: ignore[arg-type]  # into a fresh message of the same kind: a copy
        timing = common_pb2.StageTiming(stage=CACHE_STAGE, millis=(time.perf_counter() - began) * 1000)
        reply.timings.append(timing)  # type: ignore[attr-defined]
        return reply

    def put(self, generation: str, key: Hashable, reply: Message) -> None:
        """Keep `reply` (without its timings) for `key` on `generation`."""
        replies = self._for(generation)
        if replies is None:
            return
        kept = type(reply)()
        kept.CopyFrom(reply)
        kept.ClearField("timings")
        replies.get_or_make(key, lambda: kept)
