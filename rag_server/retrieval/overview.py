"""Drug overview: every prose chunk of the drug in book section order, then part order, each section's
first chunk prefixed with 【display name】. A bare drug name keeps only the vocabulary's intro sections."""

from __future__ import annotations

from dataclasses import replace

from rag_server.domain import ChunkKind, Hit, ScoreKind
from rag_server.store.base import ChunkFilter, Store
from rag_server.vocabulary import Vocabulary


def overview_hits(store: Store, drug_id: str, vocabulary: Vocabulary, intro_only: bool) -> list[Hit]:
    chunks = store.scroll(ChunkFilter(drug_id=drug_id, chunk_kind=ChunkKind.PROSE.value))
    if intro_only:
        keep = set(vocabulary.intro_sections)
        chunks = [c for c in chunks if c.section_key in keep]
    chunks.sort(key=lambda c: (vocabulary.order(c.section_key), c.section_key, c.part_index, c.chunk_id))
    hits: list[Hit] = []
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.section_key not in seen:
            seen.add(chunk.section_key)
            chunk = replace(chunk, text=f"【{chunk.drug_name}】 {chunk.text}")
        hits.append(Hit(chunk=chunk, score=1.0, score_kind=ScoreKind.EXACT))
    return hits
