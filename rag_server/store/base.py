"""The Store interface. Both adapters (edge.py, client.py) pass the same congruence tests.

Points live in *generations*: a load writes a new generation and `switch()` makes it the one that
is served only after the whole load and the gates succeeded. Reads always go to the active one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rag_server.domain import BOXES_PAYLOAD_KEY, IMAGE_PAYLOAD_KEY, Chunk, Hit, Manifest

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
INDEXED_FIELDS = ("drug_id", "section_key", "chunk_kind", "chunk_id")


@dataclass(frozen=True)
class SparseVector:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class ChunkFilter:
    """A payload filter; every set field must match (section_keys, drug_ids, chunk_ids: any of).

    What is read back: scrolls and searches leave out a table's image (`Chunk.table_png`) and the page
    boxes of the text (`Chunk.boxes`) unless `with_images` / `with_boxes` ask for them (a section shown
    with its tables, the boxes of cited chunks), so a search or a scroll of the corpus moves no image."""

    drug_id: str | None = None
    section_keys: tuple[str, ...] | None = None
    chunk_kind: str | None = None
    drug_ids: tuple[str, ...] | None = None
    chunk_ids: tuple[str, ...] | None = None
    with_images: bool = False
    with_boxes: bool = False

    def left_out(self) -> list[str]:
        """Payload keys not to read back."""
        asked = ((IMAGE_PAYLOAD_KEY, self.with_images), (BOXES_PAYLOAD_KEY, self.with_boxes))
        return [key for key, wanted in asked if not wanted]


@dataclass(frozen=True)
class PointData:
    chunk: Chunk
    dense: list[float]
    sparse: SparseVector


class Store(Protocol):
    """What retrieval and ingestion need from a vector store."""

    # --- reads (active generation) ---
    def scroll(self, flt: ChunkFilter) -> list[Chunk]:
        """Every matching chunk, paging until exhausted (never a top-k), in no particular order."""

    def search_dense(self, vector: Sequence[float], flt: ChunkFilter, limit: int) -> list[Hit]: ...

    def search_sparse(self, vector: SparseVector, flt: ChunkFilter, limit: int) -> list[Hit]: ...

    def search_hybrid(
        self, dense: Sequence[float], sparse: SparseVector, flt: ChunkFilter, limit: int
    ) -> list[Hit]:
        """Sparse + dense prefetch fused with RRF inside Qdrant's query API (ScoreKind.FUSED)."""

    def count(self, flt: ChunkFilter) -> int: ...

    def manifest(self) -> Manifest | None:
        """Manifest of the active generation, None when nothing is served yet."""

    # --- writes ---
    def create_generation(self, generation: str, dims: int) -> None: ...

    def upsert(self, generation: str, points: Sequence[PointData]) -> None: ...

    def generation_count(self, generation: str) -> int: ...

    def switch(self, generation: str, manifest: Manifest) -> None:
        """Atomically make `generation` the served one and record its manifest."""

    def drop_generation(self, generation: str) -> None: ...

    def close(self) -> None: ...
