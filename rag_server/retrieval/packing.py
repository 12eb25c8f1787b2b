"""Pack evidence into a token budget: whole chunks in retrieval order, never cutting text.

A chunk that does not fit is skipped (recorded in omitted_ids) and packing goes on with the next one,
so a smaller later chunk can still fit; the kept ones keep their relative order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_server.domain import Hit
from rag_server.text import count_tokens


@dataclass
class Packed:
    kept: list[Hit] = field(default_factory=list)
    omitted_ids: list[str] = field(default_factory=list)
    tokens: int = 0


def pack_evidence(hits: Sequence[Hit], max_tokens: int) -> Packed:
    packed = Packed()
    for hit in hits:
        cost = count_tokens(hit.chunk.text)
        if packed.tokens + cost <= max_tokens:
            packed.kept.append(hit)
            packed.tokens += cost
        else:
            packed.omitted_ids.append(hit.chunk.chunk_id)
    return packed
