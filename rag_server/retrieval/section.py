"""The section route (the primary path) and bounded cross-section pooling (than_trong only).

The section route is a payload-filter scroll, never a top-k: every part of the section, prose parts
by part_index, then the section's block descriptors by table_id; score 1.0 (EXACT) by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.domain import Chunk, ChunkKind, Hit, ScoreKind
from rag_server.retrieval.lexical import matched_terms
from rag_server.store.base import ChunkFilter, SparseVector, Store

_LEXICAL_POOL_ENABLED_SECTIONS = {"than_trong"}
_LEXICAL_POOL_EXCLUDED_SECTIONS = {"duoc_ly_va_co_che_tac_dung"}
_LEXICAL_POOL_MIN_SCORE = 5.0  # distinct matched content terms of the question
_MAX_LEXICAL_POOLED_SECTIONS = 2
_LEXICAL_POOL_CANDIDATES = 24  # BM25 candidates (same drug) examined by the gate


def order_section(chunks: Sequence[Chunk]) -> list[Chunk]:
    prose = sorted(
        (c for c in chunks if c.chunk_kind == ChunkKind.PROSE), key=lambda c: (c.part_index, c.chunk_id)
    )
    blocks = sorted(
        (c for c in chunks if c.chunk_kind != ChunkKind.PROSE),
        key=lambda c: (c.table_id, c.part_index, c.chunk_id),
    )
    return prose + blocks


def section_hits(store: Store, drug_id: str, section_key: str) -> list[Hit]:
    chunks = store.scroll(ChunkFilter(drug_id=drug_id, section_keys=(section_key,)))
    return [Hit(chunk=c, score=1.0, score_kind=ScoreKind.EXACT) for c in order_section(chunks)]


def pooled_neighbour_hits(
    store: Store, drug_id: str, section_key: str, terms: Sequence[str], sparse: SparseVector
) -> list[Hit]:
    """Chunks of at most two other sections of the same drug matching >= 5 distinct content terms.

    BM25 (store.search_sparse) ranks the candidates; the matched-term count gates them.
    """
    if section_key not in _LEXICAL_POOL_ENABLED_SECTIONS or len(terms) < _LEXICAL_POOL_MIN_SCORE:
        return []
    candidates = store.search_sparse(
        sparse, ChunkFilter(drug_id=drug_id, chunk_kind=ChunkKind.PROSE.value), _LEXICAL_POOL_CANDIDATES
    )
    pooled: list[Hit] = []
    sections: list[str] = []
    for hit in candidates:
        key = hit.chunk.section_key
        if key == section_key or key in _LEXICAL_POOL_EXCLUDED_SECTIONS:
            continue
        matched = matched_terms(terms, hit.chunk.text)
        if matched < _LEXICAL_POOL_MIN_SCORE:
            continue
        if key not in sections:
            if len(sections) >= _MAX_LEXICAL_POOLED_SECTIONS:
                continue
            sections.append(key)
        pooled.append(Hit(chunk=hit.chunk, score=float(matched), score_kind=ScoreKind.LEXICAL))
    return pooled
