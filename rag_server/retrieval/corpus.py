"""The Corpus: everything one served generation answers with, built once off the event loop when the
generation is served and swapped in one place (app.CorpusHolder). A value: routes read it, never change it
(its caches fill as they are used and die with it, so they are never stale).

Built from one scroll of the generation: the drug catalog, the class index, the indication index; the
calibrated floors come from its manifest. `Providers` are what the routes call beside the store (the
query embedder, the reranker); they outlive generations.

Blocking work is decided where a call is scheduled (api/work.py), never at call sites: a call is first run
against `inline()` views, whose store and providers raise NeedsWorker on any use, and again on the worker
pool with the real ones when it reached one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag_server.domain import Chunk, Manifest
from rag_server.providers.base import Embedder, EmbedKind, RerankDoc
from rag_server.providers.rerank.breaker import BreakerState
from rag_server.providers.rerank.guarded import Ranker, RerankOutcome
from rag_server.retrieval.caches import Lru, QueryVectors
from rag_server.retrieval.indication_index import IndicationIndex
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.store.base import ChunkFilter, Store
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.drug_classes import ClassIndex
from rag_server.vocabulary.language import Language


class NeedsWorker(Exception):
    """An inline attempt reached blocking work (the store, a provider): run the call on the worker pool."""


@dataclass(frozen=True, eq=False)
class Corpus:
    store: Store
    language: Language
    policy: EvidencePolicy
    manifest: Manifest | None = None
    catalog: Catalog | None = None
    classes: ClassIndex | None = None
    indications: IndicationIndex = field(default_factory=IndicationIndex)
    query_vectors: QueryVectors = field(default_factory=lambda: QueryVectors(0))
    sections: Lru[tuple[str, str], Any] = field(default_factory=lambda: Lru(0))

    @classmethod
    def build(cls, store: Store, language: Language, policy: EvidencePolicy) -> Corpus:
        """One scroll of the served generation -> catalog, class index, indication index (blocking)."""
        manifest = store.manifest()
        chunks: Sequence[Chunk] = store.scroll(ChunkFilter()) if manifest is not None else []
        catalog = build_catalog(chunks, language, manifest.generation) if manifest is not None else None
        return cls(
            store=store,
            language=language,
            policy=policy,
            manifest=manifest,
            catalog=catalog,
            classes=ClassIndex(language.clinical, catalog) if catalog is not None else None,
            indications=IndicationIndex.of(chunks, language.vocabulary.roles.indication),
            query_vectors=QueryVectors(policy.query_cache_size),
            sections=Lru(policy.section_cache_size),
        )

    @property
    def generation(self) -> str:
        return self.manifest.generation if self.manifest is not None else ""

    @property
    def loaded(self) -> bool:
        return self.manifest is not None and self.catalog is not None

    @property
    def indication_dense_floor(self) -> float:
        return self.manifest.indication_dense_floor if self.manifest is not None else 0.0

    def inline(self) -> Corpus:
        """This corpus with a store that raises NeedsWorker (its caches and indexes shared)."""
        return replace(self, store=_InlineStore())


@dataclass(frozen=True)
class Providers:
    """What the routes call besides the store (None: not configured)."""

    embedder: Embedder | None = None
    reranker: Ranker | None = None

    def inline(self) -> Providers:
        """These providers, each raising NeedsWorker when called (a local reranker stays: it is cheap)."""
        reranker = self.reranker
        if reranker is not None and not reranker.local:
            reranker = _InlineReranker(reranker)
        return Providers(_InlineEmbedder(self.embedder) if self.embedder is not None else None, reranker)


class _InlineStore:
    """Stands in for the store during an inline attempt: any use is blocking work."""

    def __getattr__(self, name: str) -> Any:
        raise NeedsWorker(f"store.{name}")


class _InlineEmbedder:
    def __init__(self, inner: Embedder) -> None:
        self.model = inner.model
        self.dims = inner.dims

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        raise NeedsWorker("embedder")


class _InlineReranker:
    def __init__(self, inner: Ranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.uses_dense_scores = inner.uses_dense_scores
        self.local = inner.local

    @property
    def state(self) -> BreakerState:  # reading the breaker's state is no call
        return self.inner.state

    def rerank_guarded(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> RerankOutcome:
        raise NeedsWorker("reranker")

