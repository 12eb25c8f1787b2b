""" "Does X cause Y": X's effect sections (sections.toml [roles] effect_sections: the ADRs, precautions,
contraindications), read whole by the exact section route, and of them the chunks that carry Y (its forms:
the words asked and their vocabulary synonyms, on word boundaries, text.carry).

The sections a cue of the question favours (its section prior: "phải làm sao" -> the ADR management and
overdose sections, "có phải ngừng" -> the precautions) are read first, and their chunks carrying Y come
first: "bị nổi mề đay phải làm sao" is answered by how the book treats it, then by where it lists it.

Nothing carrying Y is an answer too: EFFECT_NOT_LISTED, with the sections that were read, so the answer says
that the book does not list Y for X (which does not mean it never happens) instead of showing unrelated
lines.
"""

from __future__ import annotations

from rag_server.domain import Hit, Reason
from rag_server.reasons import make_decision
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.decide import decide
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.section import whole_section
from rag_server.retrieval.timing import Timings
from rag_server.text.carry import carries
from rag_server.understanding.frame import QueryFrame


def effect_route(
    frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings
) -> RetrievalResult:
    assert frame.effect is not None
    forms = frame.effect.forms
    roles = corpus.language.vocabulary.roles
    evidence: list[Hit] = []
    read: list[tuple[str, str]] = []
    prior = dict(frame.section_prior)
    favoured = [k for k, w in sorted(prior.items(), key=lambda kv: -kv[1]) if w > 0]
    keys = sorted(dict.fromkeys([*favoured, *roles.effect_sections]), key=lambda k: -prior.get(k, 0.0))
    for drug_id in frame.drug_ids:
        for key in keys:
            with timings.stage("scroll"):
                section = whole_section(corpus, drug_id, key)
            if not section.hits:
                continue
            read.append((drug_id, key))
            with timings.stage("carry"):
                evidence.extend(h for h in section.hits if carries(h.chunk.text, forms))
    if not read:
        return RetrievalResult(make_decision(Reason.SECTION_NOT_FOUND), route=Route.EFFECT)
    if not evidence:
        decision = make_decision(Reason.EFFECT_NOT_LISTED, detail=frame.effect.text)
        return RetrievalResult(decision, route=Route.EFFECT, read_sections=tuple(read))
    with timings.stage("decide"):
        decision = decide(evidence)
    return RetrievalResult(decision, evidence, route=Route.EFFECT, read_sections=tuple(read))
