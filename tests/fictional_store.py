"""A real store (embedded qdrant-edge, or qdrant-client local mode) loaded with the fictional chunks of
fictional_formulary.py, real e5 vectors and real BM25 sparse vectors. NOT medical information."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fictional_formulary import DOCUMENT_ID, build_chunks

from ingest.calibrate import indication_dense_floor
from ingest.load import load_generation, make_manifest, sparse_vectors
from rag_server.domain import Chunk
from rag_server.providers.base import Embedder
from rag_server.store.base import Store
from rag_server.vocabulary.clinical import load_clinical


def load_fictional(store: Store, embedder: Embedder, chunks: list[Chunk] | None = None) -> list[Chunk]:
    chunks = chunks if chunks is not None else build_chunks()
    dense = embedder.embed([c.text for c in chunks], "document")
    floor = indication_dense_floor(chunks, dense, embedder, load_clinical().calibration)
    load_generation(
        store,
        chunks,
        dense,
        sparse_vectors(chunks),
        dims=embedder.dims,
        batch_size=128,
        manifest_for=lambda generation: make_manifest(
            chunks,
            generation=generation,
            embedding_model=embedder.model,
            dims=embedder.dims,
            document_id=DOCUMENT_ID,
            monograph_count=len({c.drug_id for c in chunks}),
            section_count=len({(c.drug_id, c.section_key) for c in chunks}),
            indication_dense_floor=floor,
        ),
    )
    return chunks


def open_edge(root: Path) -> Store:
    from rag_server.store.edge import EdgeStore

    return EdgeStore(root)


class KeepOpen:
    """Store wrapper whose close() is a no-op: stopping one server leaves a module's shared store usable."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        pass
