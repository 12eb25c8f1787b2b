"""Helpers shared by the embedders: batching and unit-length normalisation."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from rag_server.providers.base import ProviderError


def batches(texts: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(texts), size):
        yield list(texts[start : start + size])


def unit(vector: Sequence[float], dims: int | None = None) -> list[float]:
    """The vector scaled to length 1; a wrong length, a NaN or a zero vector is a provider error."""
    if dims is not None and len(vector) != dims:
        raise ProviderError(f"embedding has {len(vector)} dimensions, expected {dims}")
    values = [float(x) for x in vector]
    norm = math.sqrt(math.fsum(x * x for x in values))
    if not math.isfinite(norm) or norm == 0.0:
        raise ProviderError("embedding is zero or not finite")
    return [x / norm for x in values]
