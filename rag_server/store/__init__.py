"""The vector store behind one interface: embedded qdrant-edge-py (default) or a Qdrant server."""

from rag_server.store.base import ChunkFilter, SparseVector, Store

__all__ = ["ChunkFilter", "SparseVector", "Store"]
