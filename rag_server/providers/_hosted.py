"""What the hosted embedders (Cohere, Bedrock) share: batching, unit-length vectors, and output dims
that are known from a table or probed once with a one-word call."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rag_server.providers._dims import KNOWN_DIMS
from rag_server.providers._vectors import batches, unit
from rag_server.providers.base import EmbedKind

INPUT_TYPES = {"document": "search_document", "query": "search_query"}


class HostedEmbedder:
    model: str

    def __init__(self, model_id: str, batch_size: int, max_texts: int, dims: int | None) -> None:
        self.model_id = model_id
        self.batch_size = max(1, min(batch_size, max_texts))
        self._dims = dims or KNOWN_DIMS.get(model_id)
        self._probe_lock = threading.Lock()

    def _call(self, texts: list[str], kind: EmbedKind) -> list[list[float]]:
        """One provider request for at most batch_size texts; raises ProviderError on failure."""
        raise NotImplementedError

    @property
    def dims(self) -> int:
        if self._dims is None:
            with self._probe_lock:
                if self._dims is None:
                    self._dims = len(self._call(["dims"], "query")[0])
        return self._dims

    @dims.setter
    def dims(self, value: int) -> None:
        self._dims = value

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batches(texts, self.batch_size):
            vectors = self._call(batch, kind)
            out.extend(unit(v, self._dims) for v in vectors)
            if self._dims is None and vectors:
                self._dims = len(vectors[0])
        return out
