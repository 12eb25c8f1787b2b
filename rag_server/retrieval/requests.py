"""The RetrievalService requests as plain functions of (request fields, Corpus, Providers): each reads its
question once (understanding.reading) and goes through the one dispatch (retrieval.routes)."""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.domain import Reason
from rag_server.reasons import make_decision
from rag_server.retrieval import indication, patient_safety
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.results import AssessmentResult, IndicationResult, RetrievalResult
from rag_server.retrieval.timing import Timings
from rag_server.understanding.catalog import DrugInfo
from rag_server.understanding.frame import PatientFacts, QueryFrame, Reading, TurnType
from rag_server.understanding.reading import for_drug, for_patient, for_section, read


def read_request(query: str, drug_id: str, section_key: str, corpus: Corpus) -> Reading:
    """A Retrieve's reading: the question read once, then its drug_id and section_key applied."""
    if drug_id and not query.strip():
        turn = TurnType.SECTION_QUESTION if section_key else TurnType.DRUG_OVERVIEW
        return Reading(QueryFrame(turn, drug_ids=(drug_id,), section_key=section_key))
    reading = read(query, corpus.catalog, corpus.language)
    if drug_id:
        return for_drug(reading, drug_id, section_key)
    if section_key:
        return for_section(reading, section_key)
    return reading


def with_reading_time(result: RetrievalResult, millis: float) -> RetrievalResult:
    """The result with the reading's time as its first stage ("understand")."""
    result.timings.stages.insert(0, ("understand", millis))
    return result


def lookup_indication(text: str, corpus: Corpus, providers: Providers) -> IndicationResult:
    timings = Timings()
    result = indication.lookup(text, corpus, providers, timings)
    result.timings = timings
    return result


def assess_patient(drug_ids: Sequence[str], facts: PatientFacts, corpus: Corpus, providers: Providers
                   ) -> AssessmentResult:
    timings = Timings()
    if not corpus.loaded:
        return AssessmentResult(make_decision(Reason.CORPUS_NOT_LOADED), timings=timings)
    frame = for_patient(drug_ids, facts, corpus.catalog, corpus.language)
    result = patient_safety.assess(frame, corpus, providers, timings)
    result.timings = timings
    return result


def list_drugs(corpus: Corpus) -> list[DrugInfo] | None:
    if corpus.catalog is None:
        return None
    return sorted(corpus.catalog.drugs.values(), key=lambda d: d.drug_id)
