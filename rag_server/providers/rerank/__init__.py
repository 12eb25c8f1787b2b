"""Rerankers: offline (default), Cohere, and the timeout + circuit-breaker guard around either."""

from rag_server.providers.rerank.breaker import CLOSED, HALF_OPEN, OPEN, BreakerState, CircuitBreaker
from rag_server.providers.rerank.factory import build_reranker
from rag_server.providers.rerank.guarded import (
    DISABLED,
    GuardedReranker,
    Ranker,
    RerankFailure,
    RerankOutcome,
)

__all__ = [
    "CLOSED",
    "DISABLED",
    "HALF_OPEN",
    "OPEN",
    "BreakerState",
    "CircuitBreaker",
    "GuardedReranker",
    "Ranker",
    "RerankFailure",
    "RerankOutcome",
    "build_reranker",
]
