"""Cohere rerank (rerank-v3.5) through the cohere SDK's ClientV2; tests point base_url at 127.0.0.1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_server.providers.base import ProviderError, RerankDoc
from rag_server.providers.cohere.client import cohere_client


class CohereReranker:
    name = "cohere"
    uses_dense_scores = False
    local = False  # a network call: the guard runs it on a timeout thread

    def __init__(
        self,
        api_key: str,
        model: str = "rerank-v3.5",
        base_url: str = "",
        timeout_s: float = 10.0,
        client: Any = None,
    ) -> None:
        if client is None:
            client = cohere_client(api_key, base_url, timeout_s, max_retries=0)  # no retry within the timeout
        self._client = client
        self.model = model

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        if not docs or top_k <= 0:
            return []
        try:
            reply = self._client.rerank(
                model=self.model, query=query, documents=[d.text for d in docs], top_n=min(top_k, len(docs))
            )
        except Exception as exc:
            raise ProviderError(f"cohere rerank failed: {type(exc).__name__}: {exc}") from exc
        results = getattr(reply, "results", None)
        if results is None:
            raise ProviderError("cohere rerank reply has no results")
        return [(int(r.index), float(r.relevance_score)) for r in results]
