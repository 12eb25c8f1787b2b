"""RAG_EMBED_MAX_WORDS: only the head of each text is embedded, and the model id says so."""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.config import Settings
from rag_server.providers.base import EmbedKind
from rag_server.providers.factory import HeadEmbedder, build_embedder


class Recording:
    model = "rec"
    dims = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        self.seen.extend(texts)
        return [[1.0, 0.0] for _ in texts]


def test_head_embedder_truncates_to_whole_words_and_renames_the_model() -> None:
    inner = Recording()
    head = HeadEmbedder(inner, 3)
    assert head.embed(["một hai  ba bốn năm", "ngắn"], "document") == [[1.0, 0.0], [1.0, 0.0]]
    assert inner.seen == ["một hai ba", "ngắn"]
    assert head.model == "rec+first3words" and head.dims == 2


def test_factory_wraps_only_when_configured() -> None:
    plain = build_embedder(Settings())  # type: ignore[call-arg]
    assert not isinstance(plain, HeadEmbedder)
    head = build_embedder(Settings(embed_max_words=40))  # type: ignore[call-arg]
    assert isinstance(head, HeadEmbedder) and head.model.endswith("+first40words")
