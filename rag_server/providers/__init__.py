"""Providers behind small interfaces: Embedder, Reranker. Offline implementations are the default."""
