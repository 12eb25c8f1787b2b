"""The one dispatch from a reading to its route: a table from turn type to a plain function of
(frame, Corpus, Providers, Timings). Every RPC that retrieves (Retrieve, Ask) goes through `retrieve`.

A reading that cannot be acted on (out of scope, a clarification, an unknown drug) gets its decision
without touching the store; a corpus not loaded answers CORPUS_NOT_LOADED. A free-form question naming no
drug searches the corpus; "does X cause Y" reads X's effect sections whole (effect.py).
"""

from __future__ import annotations

from collections.abc import Callable

from rag_server.domain import Reason
from rag_server.reasons import make_decision
from rag_server.retrieval import effect, freeform, indication, overview, patient_safety, section
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.results import RetrievalResult, Route
from rag_server.retrieval.timing import Timings
from rag_server.understanding.frame import QueryFrame, Reading, SituationKind, TurnType

RouteFn = Callable[[QueryFrame, Corpus, Providers, Timings], RetrievalResult]


def _free_form(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> RetrievalResult:
    if not frame.drug_ids:
        return freeform.corpus_route(frame, corpus, providers, timings)
    if frame.effect is not None:
        return effect.effect_route(frame, corpus, providers, timings)
    return freeform.free_form_route(frame, corpus, providers, timings)


def _section(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> RetrievalResult:
    if not frame.section_key:
        return _free_form(frame, corpus, providers, timings)
    if frame.effect is not None and frame.section_key in corpus.language.vocabulary.roles.effect_sections:
        # "hồi hộp có phải tác dụng phụ của X": the sentences naming it, not the whole ADR list
        return effect.effect_route(frame, corpus, providers, timings)
    return section.section_route(frame, corpus, providers, timings)


def _indication(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> RetrievalResult:
    if not frame.indication:
        return RetrievalResult(make_decision(Reason.MISSING_REQUIRED_FIELD, detail="indication"))
    looked = indication.lookup(frame.indication, corpus, providers, timings)
    evidence = [h for c in looked.candidates for h in c.evidence]
    return RetrievalResult(
        looked.decision, evidence, route=Route.INDICATION, candidates=list(looked.candidates)
    )


def _patient(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> RetrievalResult:
    limit = corpus.policy.patient_candidate_limit
    if len(frame.drug_ids) > limit:  # never assess a silently truncated list: ask for fewer drugs instead
        detail = f"at most {limit} drugs per patient assessment"
        return RetrievalResult(make_decision(Reason.MISSING_REQUIRED_FIELD, detail=detail))
    assessed = patient_safety.assess(frame, corpus, providers, timings)
    evidence = [h for c in assessed.candidates for f in c.facets for h in f.evidence]
    return RetrievalResult(assessed.decision, evidence, route=Route.PATIENT, assessment=assessed)


def _clarify(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> RetrievalResult:
    reason = Reason.AMBIGUOUS_DRUG if len(frame.drug_ids) > 1 else Reason.MISSING_REQUIRED_FIELD
    return RetrievalResult(make_decision(reason, detail=", ".join(frame.missing_fields)))


def _answered(reason: Reason) -> RouteFn:
    def route(frame: QueryFrame, corpus: Corpus, providers: Providers, timings: Timings) -> RetrievalResult:
        return RetrievalResult(make_decision(reason))

    return route


ROUTES: dict[TurnType, RouteFn] = {
    TurnType.SECTION_QUESTION: _section,
    TurnType.DRUG_OVERVIEW: overview.overview_route,
    TurnType.FREE_FORM: _free_form,
    TurnType.INDICATION_LOOKUP: _indication,
    TurnType.PATIENT_ASSESSMENT: _patient,
    TurnType.CLARIFY: _clarify,
    TurnType.SMALLTALK: _answered(Reason.SMALLTALK),
    TurnType.OUT_OF_SCOPE: _answered(Reason.OUT_OF_SCOPE),
}


def retrieve(
    reading: Reading, corpus: Corpus, providers: Providers, timings: Timings | None = None
) -> RetrievalResult:
    """The evidence of a reading, by the route its turn type names, with its decision."""
    timings = timings if timings is not None else Timings()
    frame = reading.frame
    situation = frame.situation
    if situation.kind is SituationKind.HARM:  # refused, whatever else it asks (as Ask refuses it)
        return RetrievalResult(make_decision(Reason.HARMFUL_REQUEST), timings=timings, frame=frame)
    if situation.emergency:  # seek care now, with the named drug's overdose section (as Ask answers it)
        result = _emergency(frame, corpus) if corpus.loaded else RetrievalResult(
            make_decision(Reason.EMERGENCY, detail=situation.describe()))
        result.timings, result.frame = timings, frame
        return result
    if not corpus.loaded:
        return RetrievalResult(make_decision(Reason.CORPUS_NOT_LOADED), timings=timings, frame=frame)
    if reading.reason:
        result = RetrievalResult(make_decision(reading.reason, detail=reading.detail))
    elif frame.drug_ids and any(
        corpus.catalog is None or d not in corpus.catalog.drugs for d in frame.drug_ids
    ):
        unknown = [d for d in frame.drug_ids if corpus.catalog is None or d not in corpus.catalog.drugs]
        result = RetrievalResult(make_decision(Reason.DRUG_NOT_FOUND, detail=", ".join(unknown)))
    else:
        with timings.stage("route"):
            result = ROUTES[frame.turn_type](frame, corpus, providers, timings)
    result.timings = timings
    result.frame = frame
    return result


def _emergency(frame: QueryFrame, corpus: Corpus) -> RetrievalResult:
    """EMERGENCY (its detail naming the parts seen) with the overdose section of each named drug the book
    has (for a reaction happening now, its section on managing adverse reactions), read whole: the same
    evidence Ask attaches to its call-115 message."""
    hits = section.emergency_hits(corpus, frame.drug_ids, frame.situation.kind is SituationKind.REACTION)
    decision = make_decision(Reason.EMERGENCY, detail=frame.situation.describe())
    return RetrievalResult(decision, evidence=hits, route=Route.SECTION if hits else Route.NONE)
