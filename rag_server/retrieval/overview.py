"""Drug overview: every prose chunk of the drug in book section order, then part order, text verbatim (the
drug's name travels in its own field, never pasted into the evidence). A bare drug name keeps only the
vocabulary's intro sections."""

from __future__ import annotations

from rag_server.domain import ChunkKind, Hit, ScoreKind
from rag_server.store.base import ChunkFilter, Store
from rag_server.vocabulary import Vocabulary


def overview_hits(store: Store, drug_id: str, vocabulary: Vocabulary, intro_only: bool) -> list[Hit]:
    chunks = store.scroll(ChunkFilter(drug_id=drug_id, chunk_kind=ChunkKind.PROSE.value))
    if intro_only:
        keep = set(vocabulary.intro_sections)
        chunks = [c for c in chunks if c.section_key in keep]
    chunks.sort(key=lambda c: (vocabulary.order(c.section_key), c.section_key, c.part_index, c.chunk_id))
    return [Hit(chunk=chunk, score=1.0, score_kind=ScoreKind.EXACT) for chunk in chunks]
