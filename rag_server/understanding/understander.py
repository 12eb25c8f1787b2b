"""Understanders: what turns a question (and the conversation's earlier turns) into the one Reading every RPC
acts on. Understand and Ask both call the configured one, so Understand shows exactly the frame Ask acts on.

The offline understander (default) is the deterministic reading (understanding.reading). An LLM understander
(understanding.llm) may only pick drug_ids from the catalog's shortlist and section keys from the vocabulary;
anything else is rejected as malformed, never trusted; the reading keeps the last word on the situation,
the scope, the follow-up and the clarify loop.
"""

from __future__ import annotations

from typing import Protocol

from rag_server.understanding.catalog import Catalog
from rag_server.understanding.frame import Prior, Reading
from rag_server.understanding.reading import read
from rag_server.vocabulary.language import Language


class Understander(Protocol):
    name: str
    blocking: bool  # calls a network provider: scheduled on the worker pool, never inline

    def understand(self, question: str, prior: Prior, catalog: Catalog | None, language: Language) -> Reading:
        """Raises ProviderError (unavailable) or MalformedOutput (unusable answer)."""


class OfflineUnderstander:
    name = "offline"
    blocking = False

    def understand(self, question: str, prior: Prior, catalog: Catalog | None, language: Language) -> Reading:
        return read(question, catalog, language, prior)
