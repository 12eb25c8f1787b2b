"""build_reranker(settings, embedder): the configured reranker wrapped in timeout + circuit breaker."""

from __future__ import annotations

from rag_server.config import Settings
from rag_server.providers.base import Embedder, Reranker
from rag_server.providers.rerank.breaker import CircuitBreaker
from rag_server.providers.rerank.guarded import GuardedReranker


def build_reranker(settings: Settings, embedder: Embedder | None = None) -> GuardedReranker | None:
    """None when settings.reranker == "none" (responses then report reranker_state "disabled")."""
    inner: Reranker
    if settings.reranker == "none":
        return None
    if settings.reranker == "cohere":
        from rag_server.providers.rerank.cohere_rerank import CohereReranker

        if settings.cohere_api_key is None:
            raise ValueError("reranker=cohere needs RAG_COHERE_API_KEY")
        inner = CohereReranker(
            settings.cohere_api_key.get_secret_value(),
            model=settings.cohere_rerank_model,
            base_url=settings.cohere_base_url,
            timeout_s=max(settings.rerank_timeout_s * 2, 1.0),
        )
    else:
        from rag_server.providers.rerank.offline import OfflineReranker
        from rag_server.understanding.rules import load_rules

        inner = OfflineReranker(embedder, stopwords=load_rules().stopwords)
    breaker = CircuitBreaker(settings.rerank_breaker_failures, settings.rerank_breaker_cooldown_s)
    return GuardedReranker(inner, settings.rerank_timeout_s, breaker)
