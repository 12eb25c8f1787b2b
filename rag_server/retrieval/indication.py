"""Reverse lookup: indication -> drugs (seed 000 §5). Conditions only.

0. Generic words are no condition: an indication made only of generic words (clinical.toml [generic]:
   "thuốc", "người lớn", "trẻ em"...), stopwords, numbers or symbols gets no drugs (ABSTAIN).
1. Keyword pass over every prose chunk of the indication section (the corpus's indication index): the
   normalized indication must occur as a
   contiguous, word-boundary phrase in the chunk's words (not a substring, not a token subset); a
   phrase word typed with diacritics must match them. Score 1 + 1/(1+position) + 1/(1 + words/40).
2. Synonym pass, only when the keyword pass finds nothing: the conditions the indication names through
   clinical.toml ("huyết áp cao" -> "tăng huyết áp") are looked for by their formulary names and synonyms;
   a chunk naming more of the conditions asked about scores one more per extra condition.
3. Dense fallback only when both find nothing, and only for an indication with a non-generic word:
   indication prose only, hits below the corpus's calibrated floor (manifest.indication_dense_floor, set
   at ingest
   for its embedder; none -> no dense fallback) discarded: dense search always returns neighbours.
Chunks are grouped by drug_id taking the MAX score (never a sum or count), capped at
indication_candidate_limit drugs x indication_evidence_per_drug chunks.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence

from rag_server.domain import ChunkKind, Hit, Reason, ScoreKind
from rag_server.reasons import make_decision
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import decide
from rag_server.retrieval.indication_index import IndicationIndex, keyword_pass
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import IndicationCandidate, IndicationResult, IndicationStage
from rag_server.retrieval.timing import Timings
from rag_server.retrieval.vectors import query_vector
from rag_server.store.base import ChunkFilter
from rag_server.text.match import tokenize
from rag_server.understanding.indication import strip_indication_head
from rag_server.understanding.scope import content_words, only_generic
from rag_server.vocabulary.clinical import ConditionSpec

log = logging.getLogger("rag_server.retrieval.indication")


def synonym_pass(index: IndicationIndex, conditions: Sequence[ConditionSpec]) -> list[Hit]:
    """Chunks naming a condition by any of its forms; +1 per extra condition asked about a chunk names."""
    best: dict[str, Hit] = {}
    named: dict[str, set[str]] = defaultdict(set)
    for spec in conditions:
        for form in spec.forms:
            for hit in index.form_hits(form.text):
                cid = hit.chunk.chunk_id
                named[cid].add(spec.name.text)
                if cid not in best or hit.score > best[cid].score:
                    best[cid] = hit
    hits = [Hit(h.chunk, h.score + len(named[cid]) - 1, ScoreKind.LEXICAL) for cid, h in best.items()]
    hits.sort(key=lambda h: (-h.score, h.chunk.chunk_id))
    return hits


def dense_pass(
    indication: str, corpus: Corpus, providers: Providers, floor: float, timings: Timings
) -> tuple[list[Hit], float]:
    """(hits at or above the corpus's floor, best raw score seen) - the second for logs and tuning.
    The query is phrased like the indication text it is compared with (the template the floor was
    calibrated with: clinical.toml [calibration])."""
    with timings.stage("embed"):
        template = corpus.language.clinical.calibration.template
        vector = query_vector(corpus, providers, template.format(indication))
    assert vector is not None
    with timings.stage("search"):
        section = corpus.language.vocabulary.roles.indication
        hits = corpus.store.search_dense(
            vector,
            ChunkFilter(section_keys=(section,), chunk_kind=ChunkKind.PROSE.value),
            corpus.policy.indication_retrieval_limit,
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


def lookup(indication: str, corpus: Corpus, providers: Providers, timings: Timings) -> IndicationResult:
    """Conditions only: generic words get no drugs; keyword pass, then synonyms, then the dense fallback."""
    language = corpus.language
    if not corpus.loaded:
        return IndicationResult(make_decision(Reason.CORPUS_NOT_LOADED), indication=indication)
    toks = tokenize(indication)
    if only_generic(toks, language):
        no_condition = language.strings.details["no_condition"]
        decision = make_decision(Reason.INSUFFICIENT_RETRIEVAL_SCORE, detail=no_condition)
        return IndicationResult(decision, [], indication=indication)
    index = corpus.indications
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
    floor = corpus.indication_dense_floor
    near = [t.folded for t in content_words(toks, language) if t.folded in index.postings]
    if not hits and providers.embedder is not None and floor > 0 and near:
        hits, best = dense_pass(indication, corpus, providers, floor, timings)
        log.info("indication dense fallback: best %.4f, floor %.4f, %d kept", best, floor, len(hits))
        stage = IndicationStage.DENSE if hits else IndicationStage.NONE
    with timings.stage("group"):
        candidates = group_by_drug(hits, corpus.policy)
    if not candidates:
        decision = make_decision(Reason.INSUFFICIENT_RETRIEVAL_SCORE)
        return IndicationResult(decision, [], match_stage=stage, indication=indication)
    with timings.stage("decide"):
        decision = decide([h for c in candidates for h in c.evidence])
    return IndicationResult(decision, candidates, match_stage=stage, indication=indication)
