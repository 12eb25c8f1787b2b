"""Provider interfaces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

EmbedKind = Literal["document", "query"]


class ProviderError(RuntimeError):
    """A provider call failed (network, quota, timeout)."""


class MalformedOutput(ValueError):
    """A model answered, but not in the shape asked for (unparseable JSON, fields out of bounds)."""


class Embedder(Protocol):
    model: str
    dims: int

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        """One unit-length vector per text; `kind` selects document vs query input type."""


@dataclass(frozen=True)
class RerankDoc:
    """One candidate to rerank: its text, and what the caller already knows of it."""

    text: str
    dense: float | None = None  # cosine with the query, from the stored passage vector
    terms: Mapping[int, float] | None = None  # BM25 term weights stored at ingest (text.bm25)


class Reranker(Protocol):
    name: str
    # True when the reranker blends the dense cosines (`RerankDoc.dense`); the routes then compute them from
    # the stored vectors the search returns with each candidate instead of embedding passages.
    uses_dense_scores: bool
    # True when it computes in this process with a bounded cost (nothing to hang on): the guard calls it
    # directly instead of on a timeout thread. A hosted reranker (network) is never local.
    local: bool

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        """(index into docs, relevance) for the best `top_k`, best first."""
