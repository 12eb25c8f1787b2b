"""Optional provider SDKs are package extras; choosing a provider whose extra is missing fails at start with
one line naming the extra (`MissingExtra`), never with an ImportError deep inside a request.

    cohere    RAG_EMBEDDER, RAG_RERANKER or RAG_GENERATOR=cohere                   (cohere SDK)
    bedrock   RAG_EMBEDDER, RAG_UNDERSTANDER, RAG_GENERATOR or RAG_JUDGE=bedrock   (boto3)
    postgres  RAG_DATABASE_URL set, `rag-server migrate`                          (asyncpg)
    qdrant    RAG_STORE=qdrant                                                    (qdrant-client)
    otel      RAG_OTEL=true                                                       (opentelemetry-sdk)
"""

from __future__ import annotations

import importlib
from enum import StrEnum

from rag_server.config import Settings


class Extra(StrEnum):
    COHERE = "cohere"
    BEDROCK = "bedrock"
    POSTGRES = "postgres"
    QDRANT = "qdrant"
    OTEL = "otel"


MODULE_OF: dict[Extra, str] = {
    Extra.COHERE: "cohere",
    Extra.BEDROCK: "boto3",
    Extra.POSTGRES: "asyncpg",
    Extra.QDRANT: "qdrant_client",
    Extra.OTEL: "opentelemetry.instrumentation.grpc",
}


class MissingExtra(RuntimeError):
    """A configured provider's SDK is not installed."""


def require(extra: Extra, chosen_by: str) -> None:
    """Import the extra's SDK or raise MissingExtra naming the extra and the setting that chose it."""
    module = MODULE_OF[extra]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"{chosen_by} needs the '{extra}' extra ({module} is not installed: {exc}); "
            f"install it with: pip install 'formulary-rag[{extra}]'"
        ) from None


def needed(settings: Settings) -> list[tuple[Extra, str]]:
    """The extras these settings need, each with the setting that chose it."""
    out: list[tuple[Extra, str]] = []
    if settings.embedder == "cohere":
        out.append((Extra.COHERE, "RAG_EMBEDDER=cohere"))
    if settings.reranker == "cohere":
        out.append((Extra.COHERE, "RAG_RERANKER=cohere"))
    if settings.generator == "cohere":
        out.append((Extra.COHERE, "RAG_GENERATOR=cohere"))
    if settings.embedder == "bedrock":
        out.append((Extra.BEDROCK, "RAG_EMBEDDER=bedrock"))
    if settings.understander == "bedrock":
        out.append((Extra.BEDROCK, "RAG_UNDERSTANDER=bedrock"))
    if settings.generator == "bedrock":
        out.append((Extra.BEDROCK, "RAG_GENERATOR=bedrock"))
    if settings.judge == "bedrock":
        out.append((Extra.BEDROCK, "RAG_JUDGE=bedrock"))
    if settings.store == "qdrant":
        out.append((Extra.QDRANT, "RAG_STORE=qdrant"))
    if settings.database_url is not None and settings.database_url.get_secret_value():
        out.append((Extra.POSTGRES, "RAG_DATABASE_URL"))
    if settings.otel:
        out.append((Extra.OTEL, "RAG_OTEL=true"))
    return out


def check_extras(settings: Settings) -> None:
    """Fail before anything starts when a chosen provider's extra is missing."""
    for extra, chosen_by in needed(settings):
        require(extra, chosen_by)
