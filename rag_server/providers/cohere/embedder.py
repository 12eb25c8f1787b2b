"""Cohere embeddings through the cohere SDK (`ClientV2.embed`, float embeddings)."""

from __future__ import annotations

from typing import Any

from rag_server.providers._hosted import INPUT_TYPES, HostedEmbedder
from rag_server.providers.base import EmbedKind, ProviderError
from rag_server.providers.cohere.client import cohere_client

COHERE_MAX_TEXTS = 96  # texts per embed call accepted by the API


class CohereEmbedder(HostedEmbedder):
    # An ingest keeps this many requests in flight (RAG_EMBED_CONCURRENCY overrides): each waits on the
    # network, not on this machine's cores. The client is thread-safe; rate limits (HTTP 429) are retried by
    # the SDK and, if they persist, fail the batch (the batches already back stay cached).
    concurrent_batches = 4

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
            client = cohere_client(api_key, base_url, timeout_s, max_retries)
        self._client = client
        super().__init__(model, batch_size, COHERE_MAX_TEXTS, dims)
        self.model = f"cohere/{model}"

    def _call(self, texts: list[str], kind: EmbedKind) -> list[list[float]]:
        try:
            response = self._client.embed(
                texts=texts,
                model=self.model_id,
                input_type=INPUT_TYPES[kind],
                embedding_types=["float"],
            )
            vectors = response.embeddings.float_
        except Exception as exc:  # the SDK raises ApiError, httpx errors, validation errors
            raise ProviderError(f"cohere embed ({self.model_id}) failed: {exc}") from exc
        if vectors is None or len(vectors) != len(texts):
            got = "none" if vectors is None else str(len(vectors))
            raise ProviderError(f"cohere embed returned {got} float embeddings for {len(texts)} texts")
        return [list(v) for v in vectors]

