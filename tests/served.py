"""A served generation for tests: a Corpus and its Providers, with the RetrievalService requests as methods
(what the servicers call, without gRPC)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rag_server.providers.base import Embedder
from rag_server.providers.rerank.guarded import Ranker
from rag_server.retrieval import requests
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import AssessmentResult, IndicationResult, RetrievalResult
from rag_server.retrieval.routes import retrieve
from rag_server.store.base import Store
from rag_server.understanding.catalog import DrugInfo
from rag_server.understanding.frame import PatientFacts, QueryFrame, Reading
from rag_server.vocabulary.language import Language


@dataclass
class Served:
    corpus: Corpus
    providers: Providers

    @classmethod
    def build(cls, store: Store, language: Language, policy: EvidencePolicy | None = None,
              embedder: Embedder | None = None, reranker: Ranker | None = None) -> Served:
        corpus = Corpus.build(store, language, policy or EvidencePolicy.defaults())
        return cls(corpus, Providers(embedder, reranker))

    @property
    def store(self) -> Store:
        return self.corpus.store

    def retrieve(self, query: str = "", drug_id: str = "", section_key: str = "",
                 frame: QueryFrame | None = None) -> RetrievalResult:
        """Retrieve{query, drug_id, section_key} or Retrieve{frame} (a caller's frame, used as given)."""
        if frame is not None:
            return retrieve(Reading(frame), self.corpus, self.providers)
        began = time.perf_counter()
        reading = requests.read_request(query, drug_id, section_key, self.corpus)
        millis = (time.perf_counter() - began) * 1000
        return requests.with_reading_time(retrieve(reading, self.corpus, self.providers), millis)

    def list_drugs(self) -> list[DrugInfo] | None:
        return requests.list_drugs(self.corpus)

    def lookup_indication(self, text: str) -> IndicationResult:
        return requests.lookup_indication(text, self.corpus, self.providers)

    def assess_patient(self, drug_ids: Sequence[str], facts: PatientFacts) -> AssessmentResult:
        return requests.assess_patient(drug_ids, facts, self.corpus, self.providers)
