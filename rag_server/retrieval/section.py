"""The section route (the primary path), the sections it points to, and bounded cross-section pooling.

The section route is a payload-filter scroll, never a top-k: every part of the section, prose parts
by part_index, then the section's block descriptors by table_id; score 1.0 (EXACT) by construction.
A short section that merely points to another ("Xem mục Quá liều và xử trí.") brings that section too
(reference.py, one hop). Pooling (the pooled sections of sections.toml [roles]) adds at most two other
sections of the same drug that
match the question's content terms strongly (seed 000 §2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from rag_server.domain import Chunk, ChunkKind, Hit, Reason, ScoreKind
from rag_server.reasons import make_decision
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import decide
from rag_server.retrieval.lexical import matched_terms
from rag_server.retrieval.reference import pointer_targets, prose_text
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter, SparseVector, Store
from rag_server.text.bm25 import query_vector
from rag_server.text.match import folded_words
from rag_server.understanding.frame import QueryFrame

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
    """The whole section, with the table images and page boxes an answer shows (an exact scroll)."""
    chunks = store.scroll(
        ChunkFilter(drug_id=drug_id, section_keys=(section_key,), with_images=True, with_boxes=True)
    )
    return [Hit(chunk=c, score=1.0, score_kind=ScoreKind.EXACT) for c in order_section(chunks)]


@dataclass(frozen=True)
class WholeSection:
    """One section of one drug as the served generation holds it, and the sections it merely points to."""

    hits: tuple[Hit, ...]
    points_to: tuple[str, ...] = ()


def whole_section(corpus: Corpus, drug_id: str, section_key: str) -> WholeSection:
    """The exact lookup, once per generation: later calls are served from the corpus's section cache."""
    found: WholeSection = corpus.sections.get_or_make(
        (drug_id, section_key), lambda: _look_up(corpus, drug_id, section_key)
    )
    return found


def emergency_hits(corpus: Corpus, drug_ids: Sequence[str], reaction: bool = False) -> list[Hit]:
    """The evidence of an emergency (Retrieve and Ask alike), each drug the book has read whole: for a
    reaction happening now its section on managing adverse reactions (what the book says to do about the
    reaction) and the sections it points to ("xem Quá liều"), else (or when the drug has none) its overdose
    section."""
    roles = corpus.language.vocabulary.roles
    known = [d for d in drug_ids if corpus.catalog is not None and d in corpus.catalog.drugs]
    keys = (roles.adr_management, roles.overdose) if reaction else (roles.overdose,)
    out: list[Hit] = []
    for drug_id in known:
        for key in keys:
            found = whole_section(corpus, drug_id, key)
            if found.hits:
                out.extend(found.hits)
                for target in found.points_to if reaction else ():
                    out.extend(whole_section(corpus, drug_id, target).hits)
                break
    return out


def _look_up(corpus: Corpus, drug_id: str, section_key: str) -> WholeSection:
    hits = tuple(section_hits(corpus.store, drug_id, section_key))
    if not hits:
        return WholeSection(hits)
    info = corpus.catalog.drugs.get(drug_id) if corpus.catalog is not None else None
    present = set(info.section_keys) if info is not None else set()
    text = prose_text(h.chunk for h in hits)
    targets = tuple(k for k in pointer_targets(section_key, text, corpus.language.vocabulary) if k in present)
    return WholeSection(hits, targets)


def pooled_neighbour_hits(
    store: Store,
    drug_id: str,
    section_key: str,
    terms: Sequence[str],
    sparse: SparseVector,
    excluded: Sequence[str],
) -> list[Hit]:
    """Chunks of at most two other sections of the same drug matching >= 5 distinct content terms.

    BM25 (store.search_sparse) ranks the candidates; the matched-term count gates them.
    """
    if len(terms) < _LEXICAL_POOL_MIN_SCORE:
        return []
    candidates = store.search_sparse(
        sparse, ChunkFilter(drug_id=drug_id, chunk_kind=ChunkKind.PROSE.value), _LEXICAL_POOL_CANDIDATES
    )
    pooled: list[Hit] = []
    sections: list[str] = []
    for hit in candidates:
        key = hit.chunk.section_key
        if key == section_key or key in excluded:
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


def section_route(
    frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings
) -> RetrievalResult:
    """The whole section of each drug asked about, in part order, with what it points to and pooling."""
    evidence: list[Hit] = []
    pooled_any = False
    missing: list[str] = []
    title = corpus.language.vocabulary.title(frame.section_key)
    for drug_id in frame.drug_ids:
        with timings.stage("scroll"):
            section = whole_section(corpus, drug_id, frame.section_key)
        if not section.hits:
            missing.append(drug_id)
            continue
        evidence.extend(section.hits)
        evidence.extend(followed(corpus, drug_id, section, timings))
        if frame.query:
            with timings.stage("pool"):
                pooled = pool(frame, corpus, drug_id)
            pooled_any = pooled_any or bool(pooled)
            evidence.extend(pooled)
    if missing and not evidence:
        detail = f"{title}: {', '.join(missing)}"
        return RetrievalResult(make_decision(Reason.SECTION_NOT_FOUND, detail=detail), route=Route.SECTION)
    with timings.stage("decide"):
        decision = decide(evidence)
    if missing:  # never let one drug's section pass for all of them
        note = corpus.language.strings.notice("section_missing", section=title, drugs=", ".join(missing))
        decision = dataclasses.replace(decision, message=f"{decision.message} ({note})")
    return RetrievalResult(decision, evidence, route=Route.SECTION_POOLED if pooled_any else Route.SECTION)


def followed(corpus: Corpus, drug_id: str, section: WholeSection, timings: Timings) -> list[Hit]:
    """The sections a short section merely points to, whole, in part order, one hop; recorded as the stage
    "follow_reference"."""
    if not section.points_to:
        return []
    out: list[Hit] = []
    with timings.stage("follow_reference"):
        for key in section.points_to:
            out.extend(whole_section(corpus, drug_id, key).hits)
    return out


def pool_terms(frame: QueryFrame, stopwords: frozenset[str]) -> list[str]:
    """The distinct content words of the question's asked terms (folded), the pooling gate's terms."""
    words = [w for term in frame.asked_terms for w in folded_words(term.text)]
    return [w for w in dict.fromkeys(words) if w not in stopwords and len(w) >= 2 and not w.isdigit()]


def pool(frame: QueryFrame, corpus: Corpus, drug_id: str) -> list[Hit]:
    """Bounded cross-section pooling for one drug (the vocabulary's pooled sections only)."""
    roles = corpus.language.vocabulary.roles
    if frame.section_key not in roles.pooled:
        return []
    terms = pool_terms(frame, corpus.language.rules.stopwords)
    if len(terms) < _LEXICAL_POOL_MIN_SCORE:
        return []
    return pooled_neighbour_hits(
        corpus.store, drug_id, frame.section_key, terms, query_vector(" ".join(terms)), (roles.pharmacology,)
    )
