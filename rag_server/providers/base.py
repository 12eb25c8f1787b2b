"""Provider interfaces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

EmbedKind = Literal["document", "query"]


class ProviderError(RuntimeError):
    """A provider call failed (network, quota, malformed reply)."""


class Embedder(Protocol):
    model: str
    dims: int

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        """One unit-length vector per text; `kind` selects document vs query input type."""


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, texts: Sequence[str], top_k: int) -> list[tuple[int, float]]:
        """(index into texts, relevance) for the best `top_k`, best first."""
