"""The search query and section prior of a free-form question about one drug (ROUTE_FREE_FORM).

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

from rag_server.domain import Hit
from rag_server.text.match import Phrase, Tok, find_any, phrase, tokenize
from rag_server.understanding.catalog import BRAND_SECTION
from rag_server.understanding.rules import Rules
from rag_server.vocabulary import Vocabulary


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


def order_with_prior(
    hits: Sequence[Hit], scores: Sequence[float], prior: Mapping[str, float]
) -> list[tuple[int, float]]:
    """(index, reranker score) best first by score + prior; ties keep the incoming order."""
    order = sorted(
        range(len(hits)), key=lambda i: (-(scores[i] + prior.get(hits[i].chunk.section_key, 0.0)), i)
    )
    return [(i, scores[i]) for i in order]

