"""The search routes: a free-form question about a drug (ROUTE_FREE_FORM, hybrid search within the drug,
rerank, pack) and a medical question naming no drug (ROUTE_CORPUS_SEARCH, the same across the corpus).
Searched evidence counts only when it carries an asked term of the question (decide.EvidenceRule), and a
table chunk only when it carries one of the question's own words (never because the pool pulled it in).

The search query and section prior of a free-form question about one drug:

* Query: the frame's search text (the reading took the drug's names out, since every candidate is that
  drug's chunk already); the lexical query appends the other forms of its vocabulary terms
  (`lexical_text`: Language.forms_of, "lai xe" -> "lái xe", "mổ" -> "phẫu thuật", "aspirin" ->
  "salicylat"), the evidence rule admits any of them; the dense query embeds a bounded head of the search
  text that keeps the asked terms (`dense_text`), so a question's cost does not grow with its length.
* Candidates: the drug's sections except its label lines (identity lines such as "Loại thuốc", and the
  brand list): a one-line label is never the answer to a question without a section word, yet its few
  words (a brand, "hạ glucose máu") can outscore the passage that answers.
* Prior: the frame's section prior (its cue phrases: "có được dùng ... không", "xử trí ... sao", read by
  understanding.reading.section_prior) and 1.0 per vocabulary term of the question a candidate carries whole
  (`coverage_prior`) are added to the reranker's score (0..1) to order the candidates: coverage first, then
  the cues and the reranker; the evidence keeps the reranker's score.
  Without a reranker's scores (disabled, failing, breaker open) the hybrid order stands unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_server.domain import ChunkKind, Hit, Reason
from rag_server.reasons import make_decision
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import EvidenceRule, decide_with
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.search import dense_scores, rerank_and_pack, search_candidates
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter
from rag_server.text.carry import carries
from rag_server.understanding.frame import AskedTerm, QueryFrame
from rag_server.vocabulary import Vocabulary

MAX_DENSE_CHARS = 400  # what the dense query embeds of a question, asked terms first


def answer_sections(section_keys: Sequence[str], vocabulary: Vocabulary) -> tuple[str, ...]:
    """The sections a free-form answer may come from: all but the label lines."""
    labels = {*vocabulary.identity_sections, vocabulary.roles.brands}
    return tuple(k for k in section_keys if k not in labels)


def dense_text(frame: QueryFrame, text: str) -> str:
    """What the dense query embeds: `text` when short, else its asked terms and then its head, together at
    most MAX_DENSE_CHARS (a 2,000-character question costs what a short one does)."""
    if len(text) <= MAX_DENSE_CHARS:
        return text
    terms = " ".join(dict.fromkeys(t.text for t in frame.asked_terms))[: MAX_DENSE_CHARS // 2]
    head = text[: MAX_DENSE_CHARS - len(terms) - 1].rsplit(" ", 1)[0]
    return f"{terms} {head}".strip()


def lexical_text(frame: QueryFrame, text: str) -> str:
    """`text` followed by the other forms of the frame's vocabulary terms it does not contain."""
    extra = [f for t in frame.asked_terms if t.known for f in t.forms[1:]]
    extra = [f for f in dict.fromkeys(extra) if not carries(text, (f,))]
    return " ".join([text, *extra]) if extra else text


def free_form_route(
    frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings
) -> RetrievalResult:
    query = frame.search_text or frame.query
    hits: list[Hit] = []
    dense: list[float] | None = []
    for drug_id in frame.drug_ids:
        info = corpus.catalog.drugs.get(drug_id) if corpus.catalog is not None else None
        keys = answer_sections(info.section_keys if info else (), corpus.language.vocabulary)
        flt = ChunkFilter(drug_id=drug_id, section_keys=keys or None, chunk_kind=ChunkKind.PROSE.value)
        found = search_candidates(
            lexical_text(frame, query), dense_text(frame, query), corpus, providers, flt,
            corpus.policy.free_form_pool, timings,
        )
        hits.extend(found.hits)
        scores = dense_scores(providers, found, timings)
        dense = dense + scores if dense is not None and scores is not None else None
    rule = evidence_rule(frame, medical=False)
    prior = {**dict(frame.section_prior), **coverage_prior(frame, hits)}
    return ranked(query, hits, dense, Route.FREE_FORM, corpus, providers, timings, prior, rule)


def coverage_prior(frame: QueryFrame, hits: Sequence[Hit]) -> dict[str, float]:
    """chunk_id -> how many of the question's vocabulary terms the candidate carries whole (any form):
    each counts 1.0, above the reranker's 0..1 range, so a passage about "chức năng gan" outranks a short
    one that only shares "theo dõi" and "chức năng" with the question."""
    terms = [t.forms for t in frame.asked_terms if t.known]
    if not terms:
        return {}
    out: dict[str, float] = {}
    for h in hits:
        covered = sum(1 for forms in terms if carries(h.chunk.text, forms))
        if covered:
            out[h.chunk.chunk_id] = float(covered)
    return out


def corpus_route(
    frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings
) -> RetrievalResult:
    """A medical question naming no drug: hybrid search across the corpus (optionally one section)."""
    if not frame.query.strip():
        return RetrievalResult(make_decision(Reason.MISSING_REQUIRED_FIELD, detail="query"))
    query = frame.search_text or frame.query
    sections = (frame.section_key,) if frame.section_key else None
    flt = ChunkFilter(section_keys=sections, chunk_kind=ChunkKind.PROSE.value)
    found = search_candidates(
        lexical_text(frame, query), dense_text(frame, query), corpus, providers, flt,
        corpus.policy.candidate_limit, timings,
    )
    dense = dense_scores(providers, found, timings)
    rule = evidence_rule(frame)
    return ranked(query, found.hits, dense, Route.CORPUS_SEARCH, corpus, providers, timings, None, rule)


def evidence_rule(frame: QueryFrame, medical: bool = True) -> EvidenceRule:
    """The evidence rule of a search route: the question's medical terms (vocabulary phrases, with their
    synonyms) for a question naming no drug; all its asked terms otherwise."""
    terms: Sequence[AskedTerm] = frame.asked_terms
    if medical and any(t.known for t in terms):
        terms = [t for t in terms if t.known]
    return EvidenceRule(tuple(dict.fromkeys(f for t in terms for f in t.forms)))


def ranked(
    query: str,
    hits: list[Hit],
    dense: list[float] | None,
    route: Route,
    corpus: Corpus,
    providers: Providers,
    timings: Timings,
    prior: Mapping[str, float] | None,
    rule: EvidenceRule,
) -> RetrievalResult:
    policy = corpus.policy
    packed = rerank_and_pack(
        query, hits, providers.reranker, policy.rerank_top_k, policy.max_context_tokens, timings, dense, prior
    )
    with timings.stage("decide"):
        kept, decision = decide_with(packed.kept, rule)
    return RetrievalResult(decision, kept, packed.omitted_ids, route, reranker_state=packed.reranker_state)
