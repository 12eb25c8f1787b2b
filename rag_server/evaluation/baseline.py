"""The dense-only baseline: similarity alone picks the top chunk (no understanding, no section route).

It runs in-process against the same data dir's store and embedder as the service, so its figures
sit next to the service's (seed 000 measured 0.544 hit@1 this way). Only section questions are
scored: the baseline has no notion of abstaining or of an indication lookup.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rag_server.evaluation.dataset import Question
from rag_server.evaluation.metrics import Outcome
from rag_server.providers.base import Embedder
from rag_server.store.base import ChunkFilter, Store


def dense_baseline(
    questions: Sequence[Question],
    store: Store,
    embedder: Embedder,
    flt: ChunkFilter | None = None,
    batch_size: int = 32,
) -> list[Outcome]:
    """Top-1 dense hit for every section question (query-kind embeddings, whole corpus)."""
    section_questions = [q for q in questions if q.kind == "section"]
    outcomes: list[Outcome] = []
    for start in range(0, len(section_questions), batch_size):
        batch = section_questions[start : start + batch_size]
        began = time.perf_counter()
        vectors = embedder.embed([q.query for q in batch], "query")
        embed_ms = (time.perf_counter() - began) * 1000 / max(1, len(batch))
        for question, vector in zip(batch, vectors, strict=True):
            began = time.perf_counter()
            hits = store.search_dense(vector, flt or ChunkFilter(), 1)
            millis = embed_ms + (time.perf_counter() - began) * 1000
            top = hits[0].chunk if hits else None
            outcomes.append(
                Outcome(
                    question=question,
                    got_drug_id=top.drug_id if top else "",
                    got_section_key=top.section_key if top else "",
                    decision_kind="ANSWERABLE" if top else "ABSTAIN",
                    route="DENSE_BASELINE",
                    millis=millis,
                )
            )
    return outcomes
