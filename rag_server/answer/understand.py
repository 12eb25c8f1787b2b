"""Understanding for Ask: an understander proposes a frame, deterministic guards have the last word.

The offline understander (default) is the catalog + section vocabulary reading the Retrieve route uses
(understanding/frame.py). An LLM understander (llm_understand.py) may only pick drug_ids from the catalog's
shortlist and section keys from the vocabulary; anything else is rejected as malformed, never trusted.

Guards, whichever understander spoke: the scope is re-derived from the text (a non-human subject is out of
scope whatever was proposed: a claim cannot widen it), the conversation fills what a follow-up leaves out
(answer/followup.py), and a fourth clarification in a row ends the loop (clarify_loop_exhausted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from rag_server.answer.followup import resolve
from rag_server.answer.memory import Recalled
from rag_server.domain import Reason
from rag_server.text.match import tokenize
from rag_server.understanding.frame import TurnType, Understanding
from rag_server.understanding.scope import looks_non_human
from rag_server.vocabulary.language import Language

if TYPE_CHECKING:
    from rag_server.retrieval.retriever import Retriever

MAX_CLARIFIES = 3  # the fourth consecutive clarification abstains instead


class Understander(Protocol):
    name: str

    def understand(self, question: str, recalled: Recalled, retriever: Retriever) -> Understanding:
        """Raises ProviderError (unavailable) or MalformedOutput (unusable answer)."""


class OfflineUnderstander:
    name = "offline"

    def understand(self, question: str, recalled: Recalled, retriever: Retriever) -> Understanding:
        return retriever.understand(question)


def guarded(understanding: Understanding, recalled: Recalled, language: Language) -> Understanding:
    frame = understanding.frame
    if looks_non_human(tokenize(frame.query), language.rules):
        frame.turn_type = TurnType.OUT_OF_SCOPE
        return Understanding(frame, Reason.OUT_OF_SCOPE, "", understanding.mentions)
    understanding = resolve(understanding, recalled, language.rules)
    clarifying = understanding.frame.turn_type == TurnType.CLARIFY or understanding.reason in (
        Reason.MISSING_REQUIRED_FIELD, Reason.AMBIGUOUS_DRUG
    )
    if clarifying and recalled.clarifies >= MAX_CLARIFIES:
        return Understanding(understanding.frame, Reason.CLARIFY_LOOP_EXHAUSTED, "", understanding.mentions)
    return understanding
