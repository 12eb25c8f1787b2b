"""The query embedding of a text, cached by the corpus (by normalised text) for as long as it is served."""

from __future__ import annotations

from rag_server.retrieval.corpus import Corpus, Providers


def query_vector(corpus: Corpus, providers: Providers, text: str) -> list[float] | None:
    """The query vector of `text`, None without an embedder."""
    embedder = providers.embedder
    if embedder is None:
        return None
    return corpus.query_vectors.get(text, lambda: embedder.embed([text], "query")[0])
