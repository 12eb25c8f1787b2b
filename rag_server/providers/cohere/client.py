"""The cohere SDK's ClientV2, made the same way for every Cohere provider (embeddings, chat, rerank)."""

from __future__ import annotations

from typing import Any


def cohere_client(api_key: str, base_url: str, timeout_s: float, max_retries: int) -> Any:
    """A ClientV2 with this timeout and retry count; `base_url` (tests: a server on 127.0.0.1) when given.
    The SDK is imported here, so a provider made with its own client needs no `cohere` extra."""
    import cohere

    kwargs: dict[str, Any] = {"timeout": timeout_s, "max_retries": max_retries}
    if base_url:
        kwargs["base_url"] = base_url
    return cohere.ClientV2(api_key, **kwargs)
