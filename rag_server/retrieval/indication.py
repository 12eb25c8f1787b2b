"""Reverse lookup: indication -> drugs (seed 000 §5). Conditions only.

0. Generic words are no condition: an indication made only of generic words (clinical.toml [generic]:
   "thuốc", "người lớn", "trẻ em"...), stopwords, numbers or symbols gets no drugs (ABSTAIN).
1. Keyword pass over every chi_dinh prose chunk (a scroll): the normalized indication must occur as a
   contiguous, word-boundary phrase in the chunk's words (not a substring, not a token subset); a
   phrase word typed with diacritics must match them. Score 1 + 1/(1+position) + 1/(1 + words/40).
2. Synonym pass, only when the keyword pass finds nothing: the conditions the indication names through
   clinical.toml ("huyết áp cao" -> "tăng huyết áp") are looked for by their formulary names and synonyms;
   a chunk naming more of the conditions asked about scores one more per extra condition.
3. Dense fallback only when both find nothing, and only for an indication with a non-generic word: chi_dinh
   prose only, hits below the corpus's calibrated floor (manifest.indication_dense_floor, set at ingest
   for its embedder; none -> no dense fallback) discarded: dense search always returns neighbours.
Chunks are grouped by drug_id taking the MAX score (never a sum or count), capped at
indication_candidate_limit drugs x indication_evidence_per_drug chunks.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.domain import Chunk, ChunkKind, Hit, Reason, ScoreKind
from rag_server.reasons import make_decision
from rag_server.retrieval.decide import decide
from rag_server.retrieval.inline import needs_worker
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import IndicationCandidate, IndicationResult, IndicationStage
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter
from rag_server.text.match import Tok, compatible, tokenize, words
from rag_server.understanding.frame import strip_indication_head
from rag_server.understanding.scope import content_words, only_generic
from rag_server.vocabulary.clinical import ConditionSpec

if TYPE_CHECKING:
    from rag_server.retrieval.retriever import Retriever

log = logging.getLogger("rag_server.retrieval.indication")

INDICATION_SECTION = "chi_dinh"


@dataclass(frozen=True)
class PreparedChunk:
    """A chi_dinh chunk with its words tokenized once (cached per served generation)."""

    chunk: Chunk
    words: tuple[Tok, ...]
    folded: tuple[str, ...]
    positions: Mapping[str, tuple[int, ...]]  # folded word -> its word offsets in the chunk


def prepare(chunks: Sequence[Chunk]) -> list[PreparedChunk]:
    out: list[PreparedChunk] = []
    for c in chunks:
        toks = tuple(words(tokenize(c.text)))
        folded = tuple(t.folded for t in toks)
        positions: dict[str, list[int]] = defaultdict(list)
        for i, word in enumerate(folded):
            positions[word].append(i)
        out.append(PreparedChunk(c, toks, folded, {w: tuple(at) for w, at in positions.items()}))
    return out


def keyword_score(position: int, word_count: int) -> float:
    return 1.0 + 1.0 / (1.0 + position) + 1.0 / (1.0 + word_count / 40.0)


def phrase_hits(phrase_words: Sequence[Tok], chunk: PreparedChunk) -> list[int]:
    """Word offsets of the phrase in the chunk (contiguous, word-boundary exact on the folded words, from
    where its first word occurs), then the accent check."""
    folded = tuple(t.folded for t in phrase_words)
    if not folded:
        return []
    n = len(folded)
    return [
        i
        for i in chunk.positions.get(folded[0], ())
        if chunk.folded[i : i + n] == folded
        and all(compatible(p, c.raw, c.folded) for p, c in zip(phrase_words, chunk.words[i:], strict=False))
    ]


def keyword_pass(chunks: Sequence[Chunk | PreparedChunk], indication: str) -> list[Hit]:
    phrase_words = words(tokenize(indication))
    if not phrase_words:
        return []
    hits: list[Hit] = []
    for item in chunks:
        prepared = item if isinstance(item, PreparedChunk) else prepare([item])[0]
        positions = phrase_hits(phrase_words, prepared)
        if positions:
            score = keyword_score(positions[0], len(prepared.words))
            hits.append(Hit(prepared.chunk, score, ScoreKind.LEXICAL))
    hits.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return hits


@dataclass(frozen=True)
class IndicationIndex:
    """Every chi_dinh prose chunk of the served generation, tokenized once, with an inverted index of its
    folded words: a phrase is looked for only in the chunks holding all of its words, so a lookup costs the
    chunks that could match, not the whole book. An indication none of whose words occurs there has nothing
    near it: the dense fallback is not tried."""

    chunks: tuple[PreparedChunk, ...] = ()
    postings: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # folded word -> chunk positions

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> IndicationIndex:
        prepared = prepare(
            [c for c in chunks if c.section_key == INDICATION_SECTION and c.chunk_kind is ChunkKind.PROSE]
        )
        postings: dict[str, list[int]] = defaultdict(list)
        for i, p in enumerate(prepared):
            for word in dict.fromkeys(p.folded):
                postings[word].append(i)
        return cls(tuple(prepared), {w: tuple(ids) for w, ids in postings.items()})

    def containing(self, text: str) -> list[PreparedChunk]:
        """The chunks holding every word of `text` (folded), in index order."""
        folded = list(dict.fromkeys(t.folded for t in words(tokenize(text))))
        if not folded:
            return []
        lists = sorted((self.postings.get(w, ()) for w in folded), key=len)
        common = set(lists[0]).intersection(*lists[1:])
        return [self.chunks[i] for i in sorted(common)]


def synonym_pass(index: IndicationIndex, conditions: Sequence[ConditionSpec]) -> list[Hit]:
    """Chunks naming a condition by any of its forms; +1 per extra condition asked about a chunk names."""
    best: dict[str, Hit] = {}
    named: dict[str, set[str]] = defaultdict(set)
    for spec in conditions:
        for form in spec.forms:
            for hit in keyword_pass(index.containing(form.text), form.text):
                cid = hit.chunk.chunk_id
                named[cid].add(spec.name.text)
                if cid not in best or hit.score > best[cid].score:
                    best[cid] = hit
    hits = [Hit(h.chunk, h.score + len(named[cid]) - 1, ScoreKind.LEXICAL) for cid, h in best.items()]
    hits.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return hits


def dense_pass(r: Retriever, indication: str, floor: float, timings: Timings) -> tuple[list[Hit], float]:
    """(hits at or above the corpus's floor, best raw score seen) - the second for logs and tuning.
    The query is phrased like the chi_dinh text it is compared with (the template the floor was calibrated
    with: clinical.toml [calibration])."""
    with timings.stage("embed"):
        vector = r.query_vector(r.language.clinical.calibration.template.format(indication))
    assert vector is not None
    needs_worker("store")
    with timings.stage("search"):
        hits = r.store.search_dense(
            vector,
            ChunkFilter(section_keys=(INDICATION_SECTION,), chunk_kind=ChunkKind.PROSE.value),
            r.policy.indication_retrieval_limit,
        )
    best = hits[0].score if hits else 0.0
    return [h for h in hits if h.score >= floor], best


def group_by_drug(hits: Sequence[Hit], policy: EvidencePolicy) -> list[IndicationCandidate]:
    """One candidate per drug scored by its best chunk (max, never a sum or a count)."""
    groups: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits[: policy.indication_retrieval_limit]:
        groups[hit.chunk.drug_id].append(hit)
    candidates: list[IndicationCandidate] = []
    for drug_id, items in groups.items():
        items.sort(key=lambda h: (-h.score, h.chunk.part_index, h.chunk.chunk_id))
        best = items[0]
        candidates.append(
            IndicationCandidate(
                drug_id=drug_id,
                drug_name=best.chunk.drug_name,
                score=best.score,
                score_kind=best.score_kind,
                evidence=items[: policy.indication_evidence_per_drug],
            )
        )
    candidates.sort(key=lambda c: (-c.score, c.drug_id))
    return candidates[: policy.indication_candidate_limit]


NO_CONDITION = "không có tên bệnh hay tình trạng nào để tra"


def lookup(r: Retriever, indication: str, timings: Timings) -> IndicationResult:
    """Conditions only: generic words get no drugs; keyword pass, then synonyms, then the dense fallback."""
    language = r.language
    toks = tokenize(indication)
    if only_generic(toks, language):
        decision = make_decision(Reason.INSUFFICIENT_RETRIEVAL_SCORE, detail=NO_CONDITION)
        return IndicationResult(decision, [], indication=indication)
    index = r.indications
    phrases = list(dict.fromkeys([indication.strip(), strip_indication_head(indication, language.rules)]))
    hits: list[Hit] = []
    with timings.stage("keyword"):
        for text in phrases:
            hits = keyword_pass(index.containing(text), text)
            if hits:
                break
    stage = IndicationStage.KEYWORD if hits else IndicationStage.NONE
    if not hits:
        with timings.stage("synonym"):
            named = language.clinical.only_conditions(toks, language.fillers)
            hits = synonym_pass(index, named)
        stage = IndicationStage.SYNONYM if hits else IndicationStage.NONE
    floor = r.manifest.indication_dense_floor if r.manifest is not None else 0.0
    near = [t.folded for t in content_words(toks, language) if t.folded in index.postings]
    if not hits and r.embedder is not None and floor > 0 and near:
        hits, best = dense_pass(r, indication, floor, timings)
        log.info("indication dense fallback: best %.4f, floor %.4f, %d kept", best, floor, len(hits))
        stage = IndicationStage.DENSE if hits else IndicationStage.NONE
    with timings.stage("group"):
        candidates = group_by_drug(hits, r.policy)
    if not candidates:
        decision = make_decision(Reason.INSUFFICIENT_RETRIEVAL_SCORE)
        return IndicationResult(decision, [], match_stage=stage, indication=indication)
    with timings.stage("decide"):
        decision = decide([h for c in candidates for h in c.evidence])
    return IndicationResult(decision, candidates, match_stage=stage, indication=indication)
