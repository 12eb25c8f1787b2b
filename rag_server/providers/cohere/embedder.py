"""Cohere embeddings through the cohere SDK (`ClientV2.embed`, float embeddings)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from rag_server.providers._dims import KNOWN_DIMS
from rag_server.providers._vectors import batches, unit
from rag_server.providers.base import EmbedKind, ProviderError

COHERE_MAX_TEXTS = 96  # texts per embed call accepted by the API
_INPUT_TYPES = {"document": "search_document", "query": "search_query"}


class CohereEmbedder:
    def __init__(
        self,
        api_key: str,
        model: str,
        base_url: str = "",
        *,
        batch_size: int = COHERE_MAX_TEXTS,
        dims: int | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        client: Any = None,
    ) -> None:
        if client is None:
            import cohere

            kwargs: dict[str, Any] = {"timeout": timeout_s, "max_retries": max_retries}
            if base_url:
                kwargs["base_url"] = base_url
            client = cohere.ClientV2(api_key, **kwargs)
        self._client = client
        self.model_id = model
        self.model = f"cohere/{model}"
        self.batch_size = max(1, min(batch_size, COHERE_MAX_TEXTS))
        self._dims = dims or KNOWN_DIMS.get(model)
        self._probe_lock = threading.Lock()

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

    def _call(self, texts: list[str], kind: EmbedKind) -> list[list[float]]:
        try:
            response = self._client.embed(
                texts=texts,
                model=self.model_id,
                input_type=_INPUT_TYPES[kind],
                embedding_types=["float"],
            )
            vectors = response.embeddings.float_
        except Exception as exc:  # the SDK raises ApiError, httpx errors, validation errors
            raise ProviderError(f"cohere embed ({self.model_id}) failed: {exc}") from exc
        if vectors is None or len(vectors) != len(texts):
            got = "none" if vectors is None else str(len(vectors))
            raise ProviderError(f"cohere embed returned {got} float embeddings for {len(texts)} texts")
        return [list(v) for v in vectors]

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batches(texts, self.batch_size):
            vectors = self._call(batch, kind)
            dims = self._dims
            out.extend(unit(v, dims) for v in vectors)
            if self._dims is None and vectors:
                self._dims = len(vectors[0])
        return out
