"""Drug overview: every prose chunk of the drug in book section order, then part order, text verbatim (the
drug's name travels in its own field, never pasted into the evidence). A bare drug name keeps only the
vocabulary's intro sections."""

from __future__ import annotations

from rag_server.domain import ChunkKind, Hit, ScoreKind
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import decide
from rag_server.retrieval.packing import pack_evidence
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter, Store
from rag_server.understanding.frame import QueryFrame
from rag_server.vocabulary import Vocabulary


def overview_hits(store: Store, drug_id: str, vocabulary: Vocabulary, intro_only: bool) -> list[Hit]:
    chunks = store.scroll(ChunkFilter(drug_id=drug_id, chunk_kind=ChunkKind.PROSE.value))
    if intro_only:
        keep = set(vocabulary.intro_sections)
        chunks = [c for c in chunks if c.section_key in keep]
    chunks.sort(key=lambda c: (vocabulary.order(c.section_key), c.section_key, c.part_index, c.chunk_id))
    return [Hit(chunk=chunk, score=1.0, score_kind=ScoreKind.EXACT) for chunk in chunks]


def overview_route(
    frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings
) -> RetrievalResult:
    """A bare drug name: its intro sections, packed to the token budget."""
    evidence: list[Hit] = []
    for drug_id in frame.drug_ids:
        with timings.stage("scroll"):
            evidence.extend(overview_hits(corpus.store, drug_id, corpus.language.vocabulary, intro_only=True))
    with timings.stage("pack"):
        packed = pack_evidence(evidence, corpus.policy.max_context_tokens)
    with timings.stage("decide"):
        decision = decide(packed.kept)
    return RetrievalResult(decision, packed.kept, packed.omitted_ids, Route.DRUG_OVERVIEW)
