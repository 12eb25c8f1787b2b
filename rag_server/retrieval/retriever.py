"""The Retriever: everything one served generation answers with, built ONCE when the generation is served
(App.retriever), and the entry points of RetrievalService and UnderstandingService.

A Retrieve call: api/retrieval.py -> Retriever.retrieve (understanding -> frame -> `route`) -> one route
module (section.py, overview.py, freeform.py, indication.py, patient_safety.py) -> the store -> decide.py.

Built at construction from one scroll of the generation: the drug catalog, the class index and the
indication index; the query-embedding cache lives as long as the Retriever. Blocking (store, embedder,
reranker calls): servicers run it on the worker pool with the call's budget (api/work.py).
Store not loaded (no served generation): normal responses with decision CORPUS_NOT_LOADED.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_server.domain import Chunk, Manifest, Reason
from rag_server.providers.base import Embedder, Reranker
from rag_server.reasons import make_decision
from rag_server.retrieval import freeform, indication, overview, patient_safety, section
from rag_server.retrieval.caches import Lru, QueryVectors
from rag_server.retrieval.indication import IndicationIndex
from rag_server.retrieval.inline import needs_worker
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import AssessmentResult, IndicationResult, RetrievalResult, Route
from rag_server.retrieval.search import reranker_state
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter, Store
from rag_server.text.match import Phrase, find_any, tokenize
from rag_server.understanding.catalog import Catalog, DrugInfo, build_catalog
from rag_server.understanding.drug_classes import ClassIndex
from rag_server.understanding.frame import QueryFrame, TurnType, Understanding, build_frame
from rag_server.understanding.patient import PatientFacts
from rag_server.vocabulary.language import Language


@dataclass
class FrameMemo:
    """The frame and understanding of one Retrieve call, once made."""

    found: tuple[QueryFrame, Understanding | None] | None = None
    timings: Timings = field(default_factory=Timings)


@dataclass
class Retriever:
    store: Store
    language: Language
    policy: EvidencePolicy
    embedder: Embedder | None = None
    reranker: Reranker | None = None
    manifest: Manifest | None = None
    catalog: Catalog | None = None
    classes: ClassIndex | None = None
    indications: IndicationIndex = field(default_factory=IndicationIndex)
    query_vectors: QueryVectors = field(default_factory=lambda: QueryVectors(0))
    sections: Lru[tuple[str, str], section.WholeSection] = field(default_factory=lambda: Lru(0))

    @classmethod
    def build(
        cls,
        store: Store,
        language: Language,
        policy: EvidencePolicy,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> Retriever:
        """One scroll of the served generation -> catalog, class index, indication index."""
        manifest = store.manifest()
        chunks: Sequence[Chunk] = store.scroll(ChunkFilter()) if manifest is not None else []
        catalog = build_catalog(chunks, language, manifest.generation) if manifest is not None else None
        return cls(
            store=store,
            language=language,
            policy=policy,
            embedder=embedder,
            reranker=reranker,
            manifest=manifest,
            catalog=catalog,
            classes=ClassIndex(language.clinical, catalog) if catalog is not None else None,
            indications=IndicationIndex.of(chunks),
            query_vectors=QueryVectors(policy.query_cache_size),
            sections=Lru(policy.section_cache_size),
        )

    @property
    def generation(self) -> str:
        return self.manifest.generation if self.manifest is not None else ""

    def loaded(self) -> bool:
        return self.manifest is not None and self.catalog is not None

    def reranker_state(self) -> str:
        return reranker_state(self.reranker)

    def query_vector(self, text: str) -> list[float] | None:
        """The query embedding of `text` (cached by normalised text), None without an embedder."""
        embedder = self.embedder
        if embedder is None:
            return None

        def embed() -> list[float]:
            needs_worker("embedder")
            return embedder.embed([text], "query")[0]

        return self.query_vectors.get(text, embed)

    # ------------------------------------------------------------------ understanding
    def understand(self, query: str, timings: Timings | None = None) -> Understanding:
        timings = timings if timings is not None else Timings()
        with timings.stage("understand"):
            return build_frame(query, self.catalog, self.language)

    def conflicting_drugs(self, query: str, drug_id: str) -> list[str]:
        """Drugs the query names unambiguously that are not `drug_id` (a caller's contradiction)."""
        catalog = self.catalog
        if catalog is None or not query.strip():
            return []
        names = [m for m in catalog.find(query) if not m.ambiguous and not m.weak]
        return sorted({catalog.display_name(m.drug_ids[0]) for m in names if drug_id not in m.drug_ids})

    def list_drugs(self) -> list[DrugInfo] | None:
        if self.catalog is None:
            return None
        return sorted(self.catalog.drugs.values(), key=lambda d: d.drug_id)

    def without_names(self, query: str, drug_ids: Sequence[str]) -> str:
        """The query with the catalog names of `drug_ids` taken out."""
        if self.catalog is None:
            return query
        toks = tokenize(query)
        names: list[Phrase] = [n for d in drug_ids for n in self.catalog.names_of(d)]
        drop = {j for i, p in find_any(toks, names) for j in range(i, i + len(p))}
        return " ".join(t.raw for i, t in enumerate(toks) if i not in drop)

    # ---------------------------------------------------------------------- retrieve
    def retrieve(
        self,
        query: str = "",
        drug_id: str = "",
        section_key: str = "",
        frame: QueryFrame | None = None,
        memo: FrameMemo | None = None,
    ) -> RetrievalResult:
        """`memo`: the understanding of this call, kept by a first (inline) attempt that unwound at its first
        store call (retrieval/inline.py), so the worker's attempt does not understand the question again."""
        timings = Timings()
        if not self.loaded():
            return RetrievalResult(make_decision(Reason.CORPUS_NOT_LOADED), timings=timings, frame=frame)
        understanding: Understanding | None = None
        if frame is None and memo is not None and memo.found is not None:
            frame, understanding = memo.found
            timings.extend(memo.timings)
        elif frame is None:
            frame, understanding = self._frame_for(query, drug_id, section_key, timings)
            if memo is not None:  # the routes read the frame and understanding, never change them
                memo.found, memo.timings = (frame, understanding), Timings(list(timings.stages))
        elif not frame.query:
            frame.query = query
        with timings.stage("route"):
            result = self.route(frame, understanding, timings)
        result.timings = timings
        result.frame = frame  # reranker_state stays "" unless the route used the reranker
        return result

    def _frame_for(
        self, query: str, drug_id: str, section_key: str, timings: Timings
    ) -> tuple[QueryFrame, Understanding | None]:
        if drug_id:
            key = section_key
            if not key and query.strip():
                with timings.stage("understand"):
                    match = self.language.vocabulary.resolve_section(self.without_names(query, [drug_id]))
                key = match.section_key if match else ""
            turn = (
                TurnType.SECTION_QUESTION if key
                else TurnType.FREE_FORM if query.strip()
                else TurnType.DRUG_OVERVIEW
            )
            return QueryFrame(turn, query=query, drug_ids=[drug_id], section_key=key), None
        understanding = self.understand(query, timings)
        frame = understanding.frame
        asks_a_section = frame.turn_type in (
            TurnType.SECTION_QUESTION, TurnType.FREE_FORM, TurnType.DRUG_OVERVIEW, TurnType.CLARIFY
        )
        if section_key and asks_a_section and not any(m.ambiguous for m in understanding.mentions):
            frame.section_key = section_key
            if frame.drug_ids:
                frame.turn_type = TurnType.SECTION_QUESTION
            else:  # no drug: corpus search restricted to the section
                frame.turn_type = TurnType.FREE_FORM
                frame.missing_fields = []
                understanding.reason = Reason.UNSPECIFIED
        return frame, understanding

    def route(
        self, frame: QueryFrame, understanding: Understanding | None, timings: Timings
    ) -> RetrievalResult:
        """The one dispatch from a frame to its route."""
        turn = frame.turn_type
        if understanding is not None and understanding.reason:
            return RetrievalResult(make_decision(understanding.reason, detail=understanding.detail))
        if turn == TurnType.SMALLTALK:
            return RetrievalResult(make_decision(Reason.SMALLTALK))
        if turn == TurnType.OUT_OF_SCOPE:
            return RetrievalResult(make_decision(Reason.OUT_OF_SCOPE))
        if turn == TurnType.CLARIFY:
            reason = Reason.AMBIGUOUS_DRUG if len(frame.drug_ids) > 1 else Reason.MISSING_REQUIRED_FIELD
            return RetrievalResult(make_decision(reason, detail=", ".join(frame.missing_fields)))
        if turn == TurnType.INDICATION_LOOKUP:
            if not frame.indication:
                return RetrievalResult(make_decision(Reason.MISSING_REQUIRED_FIELD, detail="indication"))
            looked = indication.lookup(self, frame.indication, timings)
            evidence = [h for c in looked.candidates for h in c.evidence]
            return RetrievalResult(looked.decision, evidence, route=Route.INDICATION)
        if not frame.drug_ids:
            return freeform.corpus_route(self, frame, timings)
        catalog = self.catalog
        unknown = [d for d in frame.drug_ids if catalog is None or d not in catalog.drugs]
        if unknown:
            return RetrievalResult(make_decision(Reason.DRUG_NOT_FOUND, detail=", ".join(unknown)))
        if turn == TurnType.PATIENT_ASSESSMENT:
            if len(frame.drug_ids) > self.policy.patient_candidate_limit:
                # Never assess a silently truncated list: ask for fewer drugs instead.
                limit = self.policy.patient_candidate_limit
                detail = f"at most {limit} drugs per patient assessment"
                return RetrievalResult(make_decision(Reason.MISSING_REQUIRED_FIELD, detail=detail))
            assessed = patient_safety.assess(self, frame.drug_ids, frame.patient, timings)
            evidence = [h for c in assessed.candidates for f in c.facets for h in f.evidence]
            return RetrievalResult(assessed.decision, evidence, route=Route.PATIENT)
        if turn == TurnType.SECTION_QUESTION and frame.section_key:
            return section.section_route(self, frame, timings)
        if turn == TurnType.DRUG_OVERVIEW:
            return overview.overview_route(self, frame, timings)
        return freeform.free_form_route(self, frame, understanding, timings)

    # ---------------------------------------------------------------------- other RPCs
    def lookup_indication(self, text: str) -> IndicationResult:
        timings = Timings()
        if not self.loaded():
            return IndicationResult(make_decision(Reason.CORPUS_NOT_LOADED), timings=timings)
        result = indication.lookup(self, text, timings)
        result.timings = timings
        return result

    def assess_patient(self, drug_ids: Sequence[str], facts: PatientFacts) -> AssessmentResult:
        timings = Timings()
        if not self.loaded():
            return AssessmentResult(make_decision(Reason.CORPUS_NOT_LOADED), timings=timings)
        result = patient_safety.assess(self, drug_ids, facts, timings)
        result.timings = timings
        return result
