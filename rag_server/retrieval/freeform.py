"""The search routes: a free-form question about a drug (ROUTE_FREE_FORM, hybrid search within the drug,
rerank, pack) and a medical question naming no drug (ROUTE_CORPUS_SEARCH, the same across the corpus).
Searched evidence counts only when it contains a term of the question (decide.EvidenceRule).

The search query and section prior of a free-form question about one drug:

* Query: the drug's names are taken out (every candidate is that drug's chunk already; a brand name in the
  query only pulled the brand-list chunk up), then the formulary terms of colloquial phrases are appended
  (rules.toml [free_form.synonyms]: "mổ" -> "phẫu thuật", "đường huyết" -> "glucose máu").
* Candidates: the drug's sections except its label lines (identity lines such as "Loại thuốc", and the
  brand list): a one-line label is never the answer to a question without a section word, yet its few
  words (a brand, "hạ glucose máu") can outscore the passage that answers.
* Prior: a cue phrase of the question ("có được dùng ... không", "có gây ... không", "xử trí ... sao",
  "dùng với ...") favours its sections (rules.toml [[free_form.prior]]): the first section listed gets
  `prior_weight`, the n-th `prior_weight / n`, summed over the cues and capped at `prior_weight`; the
  population sections (pregnancy, breastfeeding: a free-form question names neither, else it would have
  been routed there) start at `-prior_weight`. The prior is added to the reranker's score (0..1) to order
  the candidates; the evidence keeps the reranker's score.
  Without a reranker's scores (disabled, failing, breaker open) the hybrid order stands unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rag_server.domain import ChunkKind, Hit, Reason
from rag_server.reasons import make_decision
from rag_server.retrieval.decide import EvidenceRule, decide_with
from rag_server.retrieval.inline import needs_worker
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.search import dense_scores, rerank_and_pack, search_candidates
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter
from rag_server.text.match import Phrase, Phrases, Tok, find_any, phrase, tokenize
from rag_server.understanding.catalog import BRAND_SECTION
from rag_server.understanding.frame import QueryFrame, Understanding
from rag_server.understanding.scope import content_words, medical_terms
from rag_server.vocabulary import Vocabulary
from rag_server.vocabulary.rules import Rules

if TYPE_CHECKING:
    from rag_server.retrieval.retriever import Retriever


def answer_sections(section_keys: Sequence[str], vocabulary: Vocabulary) -> tuple[str, ...]:
    """The sections a free-form answer may come from: all but the label lines."""
    labels = {*vocabulary.identity_sections, BRAND_SECTION}
    return tuple(k for k in section_keys if k not in labels)


def without_spans(query: str, spans: Sequence[tuple[int, int]]) -> str:
    """The query with the token spans [start, end) removed ("" when nothing is left)."""
    toks = tokenize(query)
    drop = {i for start, end in spans for i in range(start, end)}
    return " ".join(t.raw for i, t in enumerate(toks) if i not in drop and not t.is_punct)


def name_spans(query: str, names: Sequence[Phrase]) -> list[tuple[int, int]]:
    """Token spans of the given names in the query (exact, accent-compatible)."""
    return [(i, i + len(p)) for i, p in find_any(tokenize(query), names)]


def expand(query: str, rules: Rules) -> str:
    """The query followed by the formulary terms of the colloquial phrases it contains. A one-word phrase
    with diacritics must be typed with them ("mo" may be "mổ", "mở" or "mỡ")."""
    toks = tokenize(query)
    found = {
        p.text
        for i, p in find_any(toks, [s.phrase for s in rules.synonyms])
        if len(p) > 1 or p.raw[0] == p.folded[0] or toks[i].raw == p.raw[0]
    }
    extra = [t for s in rules.synonyms if s.phrase.text in found for t in s.terms]
    extra = [t for t in dict.fromkeys(extra) if not find_any(toks, [phrase(t)])]
    return " ".join([query, *extra]) if extra else query


def section_prior(query: str | Sequence[Tok], rules: Rules) -> dict[str, float]:
    """section_key -> additive prior for a question's cue phrases (empty when no cue matches)."""
    toks = tokenize(query) if isinstance(query, str) else list(query)
    prior: dict[str, float] = {}
    weight = rules.prior_weight
    if weight <= 0:
        return prior
    for key in rules.demoted_sections:
        prior[key] = -weight
    for rule in rules.priors:
        if not find_any(toks, rule.cues):
            continue
        for n, key in enumerate(rule.sections, start=1):
            prior[key] = min(weight, prior.get(key, 0.0) + weight / n)
    return prior


def free_form_route(
    r: Retriever, frame: QueryFrame, understanding: Understanding | None, timings: Timings
) -> RetrievalResult:
    needs_worker("store")  # it always searches: tried inline, it unwinds before preparing the query
    rules = r.language.rules
    with timings.stage("query"):
        query = free_form_query(r, frame, understanding)
        prior = section_prior(query, rules)
        query = expand(query, rules)
    hits: list[Hit] = []
    dense: list[float] | None = []
    for drug_id in frame.drug_ids:
        info = r.catalog.drugs.get(drug_id) if r.catalog is not None else None
        keys = answer_sections(info.section_keys if info else (), r.language.vocabulary)
        flt = ChunkFilter(drug_id=drug_id, section_keys=keys or None, chunk_kind=ChunkKind.PROSE.value)
        found = search_candidates(r, query, flt, r.policy.free_form_pool, timings)
        hits.extend(found.hits)
        scores = dense_scores(r, found, timings)
        dense = dense + scores if dense is not None and scores is not None else None
    rule = evidence_rule(r, query, medical=False)
    return ranked(r, query, hits, dense, Route.FREE_FORM, timings, prior, rule)


def free_form_query(r: Retriever, frame: QueryFrame, understanding: Understanding | None) -> str:
    """The question without the names of the drugs searched (their mentions when the question was
    understood here, else their catalog names); the question itself when nothing else is left."""
    if understanding is not None:
        wanted = set(frame.drug_ids)
        spans = [(m.start, m.end) for m in understanding.mentions if wanted & set(m.drug_ids)]
    else:
        names = [n for d in frame.drug_ids for n in r.catalog.names_of(d)] if r.catalog is not None else []
        spans = name_spans(frame.query, names)
    return without_spans(frame.query, spans) or frame.query


def corpus_route(r: Retriever, frame: QueryFrame, timings: Timings) -> RetrievalResult:
    """A medical question naming no drug: hybrid search across the corpus (optionally one section)."""
    if not frame.query.strip():
        return RetrievalResult(make_decision(Reason.MISSING_REQUIRED_FIELD, detail="query"))
    needs_worker("store")
    sections = (frame.section_key,) if frame.section_key else None
    flt = ChunkFilter(section_keys=sections, chunk_kind=ChunkKind.PROSE.value)
    found = search_candidates(r, frame.query, flt, r.policy.candidate_limit, timings)
    dense = dense_scores(r, found, timings)
    rule = evidence_rule(r, frame.query)
    return ranked(r, frame.query, found.hits, dense, Route.CORPUS_SEARCH, timings, None, rule)


def evidence_rule(r: Retriever, query: str, medical: bool = True) -> EvidenceRule:
    """The evidence rule of a search route: the question's medical terms (and the formulary names of the
    conditions it names) for a question naming no drug; its content words otherwise."""
    toks = tokenize(query)
    language = r.language
    terms: list[Phrase] = []
    if medical:
        terms = list(medical_terms(toks, language))
        terms += [f for spec in language.clinical.conditions_named(toks) for f in spec.forms]
    if not terms:
        terms = [phrase(t.raw) for t in content_words(toks, language)]
    return EvidenceRule(Phrases(dict.fromkeys(terms)), loose=any(t.loose for t in toks))


def ranked(
    r: Retriever,
    query: str,
    hits: list[Hit],
    dense: list[float] | None,
    route: Route,
    timings: Timings,
    prior: Mapping[str, float] | None,
    rule: EvidenceRule,
) -> RetrievalResult:
    packed = rerank_and_pack(
        query, hits, r.reranker, r.policy.rerank_top_k, r.policy.max_context_tokens, timings, dense, prior
    )
    with timings.stage("decide"):
        kept, decision = decide_with(packed.kept, rule)
    state = packed.reranker_state
    return RetrievalResult(decision, kept, packed.omitted_ids, route, reranker_state=state)
