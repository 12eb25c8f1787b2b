"""build_reranker(settings, embedder): the configured reranker wrapped in timeout + circuit breaker."""

from __future__ import annotations

from collections.abc import Callable

from rag_server.config import Settings
from rag_server.extras import Extra, require
from rag_server.providers.base import Embedder, Reranker
from rag_server.providers.rerank.breaker import CircuitBreaker
from rag_server.providers.rerank.guarded import GuardedReranker
from rag_server.vocabulary.language import Language, load_language


def build_reranker(
    settings: Settings,
    embedder: Embedder | None = None,
    language: Language | None = None,
    wrap: Callable[[Reranker], Reranker] | None = None,
) -> GuardedReranker | None:
    """None when settings.reranker == "none" (responses then report reranker_state "disabled"). `wrap`
    (the app's observability: a timer) is put around the provider, inside the timeout and breaker."""
    inner: Reranker
    if settings.reranker == "none":
        return None
    if settings.reranker == "cohere":
        require(Extra.COHERE, "RAG_RERANKER=cohere")
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
        stopwords = (language or load_language()).rules.stopwords
        inner = OfflineReranker(embedder, stopwords=stopwords, lexical_weight=settings.rerank_lexical_weight)
    if wrap is not None:
        inner = wrap(inner)
    breaker = CircuitBreaker(settings.rerank_breaker_failures, settings.rerank_breaker_cooldown_s)
    return GuardedReranker(inner, settings.rerank_timeout_s, breaker)
