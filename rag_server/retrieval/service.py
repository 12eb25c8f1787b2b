"""The Retriever: understanding -> route -> decide, plus indication lookup, patient assessment and the
drug list. Blocking (store, embedder, reranker calls): servicers run it in asyncio.to_thread.

Store not loaded (no store, or no served generation): a normal response with decision
CORPUS_NOT_LOADED (ListDrugs, which has no decision field, answers FAILED_PRECONDITION instead).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_server.decision import R, make_decision
from rag_server.domain import ChunkKind, Hit
from rag_server.providers.base import Embedder, Reranker
from rag_server.providers.rerank.guarded import GuardedReranker
from rag_server.retrieval.decide import EvidenceRule, decide, decide_with
from rag_server.retrieval.freeform import answer_sections, expand, name_spans, section_prior, without_spans
from rag_server.retrieval.indication import (
    dense_pass,
    group_by_drug,
    indication_chunks,
    keyword_pass,
    known_words,
    synonym_pass,
)
from rag_server.retrieval.lexical import content_terms
from rag_server.retrieval.overview import overview_hits
from rag_server.retrieval.packing import pack_evidence
from rag_server.retrieval.patient import PatientContext, assess_candidate, read_patient
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.reference import pointer_targets, prose_text
from rag_server.retrieval.results import (
    AssessmentResult,
    IndicationResult,
    IndicationStage,
    RetrievalResult,
    Route,
)
from rag_server.retrieval.search import (
    Candidates,
    dense_scores,
    rerank_and_pack,
    reranker_state,
    search_candidates,
)
from rag_server.retrieval.section import pooled_neighbour_hits, section_hits
from rag_server.retrieval.timing import Timings
from rag_server.store.base import ChunkFilter, Store
from rag_server.text.bm25 import query_vector
from rag_server.text.match import Phrase, Phrases, find_any, phrase, tokenize
from rag_server.understanding.catalog import Catalog, CatalogCache, DrugInfo
from rag_server.understanding.frame import (
    QueryFrame,
    TurnType,
    Understanding,
    build_frame,
    strip_indication_head,
)
from rag_server.understanding.patient import PatientFacts
from rag_server.understanding.rules import Rules, load_rules
from rag_server.understanding.scope import content_words, filler_phrases, medical_terms, only_generic
from rag_server.vocabulary import Vocabulary
from rag_server.vocabulary.clinical import ClinicalVocabulary, load_clinical

if TYPE_CHECKING:
    from rag_server.app import App

log = logging.getLogger("rag_server.retrieval")
NO_CONDITION = "không có tên bệnh hay tình trạng nào để tra"

CATALOGS = CatalogCache()


@dataclass
class Retriever:
    store: Store | None
    vocabulary: Vocabulary
    policy: EvidencePolicy
    embedder: Embedder | None = None
    reranker: Reranker | None = None
    rules: Rules = field(default_factory=load_rules)
    clinical: ClinicalVocabulary = field(default_factory=load_clinical)
    catalogs: CatalogCache = field(default_factory=lambda: CATALOGS)

    # ------------------------------------------------------------------ shared
    def loaded(self) -> bool:
        return self.store is not None and self.store.manifest() is not None

    def catalog(self, timings: Timings | None = None) -> Catalog | None:
        if self.store is None:
            return None
        if timings is None:
            return self.catalogs.get(self.store, self.vocabulary)
        with timings.stage("catalog"):
            return self.catalogs.get(self.store, self.vocabulary)

    def reranker_state(self) -> str:
        return reranker_state(self.reranker)

    def understand(self, query: str, timings: Timings | None = None) -> Understanding:
        timings = timings if timings is not None else Timings()
        catalog = self.catalog(timings)
        with timings.stage("understand"):
            return build_frame(query, catalog, self.vocabulary, self.rules, self.clinical)

    def conflicting_drugs(self, query: str, drug_id: str) -> list[str]:
        """Drugs the query names unambiguously that are not `drug_id` (a caller's contradiction)."""
        catalog = self.catalog()
        if catalog is None or not query.strip():
            return []
        names = [m for m in catalog.find(query) if not m.ambiguous and not m.weak]
        return sorted({catalog.display_name(m.drug_ids[0]) for m in names if drug_id not in m.drug_ids})

    def list_drugs(self) -> list[DrugInfo] | None:
        catalog = self.catalog()
        if catalog is None or not self.loaded():
            return None
        return sorted(catalog.drugs.values(), key=lambda d: d.drug_id)

    # ---------------------------------------------------------------- retrieve
    def retrieve(
        self, query: str = "", drug_id: str = "", section_key: str = "", frame: QueryFrame | None = None
    ) -> RetrievalResult:
        timings = Timings()
        if not self.loaded():
            return RetrievalResult(
                make_decision(R.DECISION_REASON_CORPUS_NOT_LOADED), timings=timings, frame=frame
            )
        understanding: Understanding | None = None
        if frame is None:
            frame, understanding = self._frame_for(query, drug_id, section_key, timings)
        elif not frame.query:
            frame.query = query
        with timings.stage("route"):
            result = self._route(frame, understanding, timings)
        result.timings = timings
        result.frame = frame  # reranker_state stays "" unless the route used the reranker
        return result

    def _frame_for(
        self, query: str, drug_id: str, section_key: str, timings: Timings
    ) -> tuple[QueryFrame, Understanding | None]:
        if drug_id:
            section = section_key
            if not section and query.strip():
                with timings.stage("understand"):
                    match = self.vocabulary.resolve_section(self._without_names(query, [drug_id]))
                section = match.section_key if match else ""
            turn = (
                TurnType.SECTION_QUESTION
                if section
                else TurnType.FREE_FORM
                if query.strip()
                else TurnType.DRUG_OVERVIEW
            )
            return QueryFrame(turn, query=query, drug_ids=[drug_id], section_key=section), None
        understanding = self.understand(query, timings)
        frame = understanding.frame
        if (
            section_key
            and frame.turn_type
            in (
                TurnType.SECTION_QUESTION,
                TurnType.FREE_FORM,
                TurnType.DRUG_OVERVIEW,
                TurnType.CLARIFY,
            )
            and not any(m.ambiguous for m in understanding.mentions)
        ):
            frame.section_key = section_key
            if frame.drug_ids:
                frame.turn_type = TurnType.SECTION_QUESTION
            else:  # no drug: corpus search restricted to the section
                frame.turn_type = TurnType.FREE_FORM
                frame.missing_fields = []
                understanding.reason = 0
        return frame, understanding

    def _without_names(self, query: str, drug_ids: Sequence[str]) -> str:
        catalog = self.catalog()
        toks = tokenize(query)
        if catalog is None:
            return query
        names: list[Phrase] = [n for d in drug_ids for n in catalog.names_of(d)]
        drop = {j for i, p in find_any(toks, names) for j in range(i, i + len(p))}
        return " ".join(t.raw for i, t in enumerate(toks) if i not in drop)

    def _route(
        self, frame: QueryFrame, understanding: Understanding | None, timings: Timings
    ) -> RetrievalResult:
        turn = frame.turn_type
        if understanding is not None and understanding.reason:
            return RetrievalResult(make_decision(understanding.reason, detail=understanding.detail))
        if turn == TurnType.SMALLTALK:
            return RetrievalResult(make_decision(R.DECISION_REASON_SMALLTALK))
        if turn == TurnType.OUT_OF_SCOPE:
            return RetrievalResult(make_decision(R.DECISION_REASON_OUT_OF_SCOPE))
        if turn == TurnType.CLARIFY:
            reason = (
                R.DECISION_REASON_AMBIGUOUS_DRUG
                if len(frame.drug_ids) > 1
                else R.DECISION_REASON_MISSING_REQUIRED_FIELD
            )
            return RetrievalResult(make_decision(reason, detail=", ".join(frame.missing_fields)))
        if turn == TurnType.INDICATION_LOOKUP:
            if not frame.indication:
                return RetrievalResult(
                    make_decision(R.DECISION_REASON_MISSING_REQUIRED_FIELD, detail="indication")
                )
            looked = self._lookup(frame.indication, timings)
            evidence = [h for c in looked.candidates for h in c.evidence]
            return RetrievalResult(looked.decision, evidence, route=Route.INDICATION)
        if not frame.drug_ids:
            return self._corpus_search(frame, timings)
        catalog = self.catalog(timings)
        unknown = [d for d in frame.drug_ids if catalog is None or d not in catalog.drugs]
        if unknown:
            return RetrievalResult(make_decision(R.DECISION_REASON_DRUG_NOT_FOUND, detail=", ".join(unknown)))
        if turn == TurnType.PATIENT_ASSESSMENT and len(frame.drug_ids) > self.policy.patient_candidate_limit:
            # Never assess a silently truncated list: ask for fewer drugs instead.
            return RetrievalResult(
                make_decision(
                    R.DECISION_REASON_MISSING_REQUIRED_FIELD,
                    detail=f"at most {self.policy.patient_candidate_limit} drugs per patient assessment",
                )
            )
        if turn == TurnType.PATIENT_ASSESSMENT:
            assessed = self._assess(frame.drug_ids, frame.patient, timings)
            evidence = [h for c in assessed.candidates for f in c.facets for h in f.evidence]
            return RetrievalResult(assessed.decision, evidence, route=Route.PATIENT)
        if turn == TurnType.SECTION_QUESTION and frame.section_key:
            return self._section(frame, catalog, timings)
        if turn == TurnType.DRUG_OVERVIEW:
            return self._overview(frame, timings)
        return self._free_form(frame, understanding, timings)

    # ------------------------------------------------------------------ routes
    def _section(self, frame: QueryFrame, catalog: Catalog | None, timings: Timings) -> RetrievalResult:
        assert self.store is not None and catalog is not None
        evidence: list[Hit] = []
        pooled_any = False
        missing: list[str] = []
        for drug_id in frame.drug_ids:
            with timings.stage("scroll"):
                hits = section_hits(self.store, drug_id, frame.section_key)
            if not hits:
                missing.append(drug_id)
                continue
            evidence.extend(hits)
            evidence.extend(self._followed(drug_id, frame.section_key, hits, catalog, timings))
            if frame.query:
                with timings.stage("pool"):
                    pooled = self._pool(frame, drug_id, catalog)
                pooled_any = pooled_any or bool(pooled)
                evidence.extend(pooled)
        if missing and not evidence:
            return RetrievalResult(
                make_decision(
                    R.DECISION_REASON_SECTION_NOT_FOUND,
                    detail=f"{self.vocabulary.title(frame.section_key)}: {', '.join(missing)}",
                ),
                route=Route.SECTION,
            )
        with timings.stage("decide"):
            decision = decide(evidence)
        if missing:  # never let one drug's section pass for all of them
            decision.message += (
                f" (Không có mục {self.vocabulary.title(frame.section_key)}: {', '.join(missing)})"
            )
        return RetrievalResult(
            decision, evidence, route=Route.SECTION_POOLED if pooled_any else Route.SECTION
        )

    def _followed(
        self, drug_id: str, section_key: str, hits: Sequence[Hit], catalog: Catalog, timings: Timings
    ) -> list[Hit]:
        """The sections a short section merely points to ("Xem mục Quá liều và xử trí."), whole, in part
        order, one hop (see reference.py); recorded as the stage "follow_reference"."""
        assert self.store is not None
        info = catalog.drugs.get(drug_id)
        present = set(info.section_keys) if info is not None else set()
        targets = [
            k
            for k in pointer_targets(section_key, prose_text(h.chunk for h in hits), self.vocabulary)
            if k in present
        ]
        if not targets:
            return []
        followed: list[Hit] = []
        with timings.stage("follow_reference"):
            for key in targets:
                followed.extend(section_hits(self.store, drug_id, key))
        return followed

    def _pool(self, frame: QueryFrame, drug_id: str, catalog: Catalog) -> list[Hit]:
        assert self.store is not None
        drop: list[Phrase] = list(catalog.names_of(drug_id))
        match = self.vocabulary.resolve_section(self._without_names(frame.query, [drug_id]))
        if match is not None:
            drop.append(phrase(match.phrase))
        terms = content_terms(tokenize(frame.query), self.rules.stopwords, drop)
        return pooled_neighbour_hits(
            self.store, drug_id, frame.section_key, terms, query_vector(" ".join(terms))
        )

    def _overview(self, frame: QueryFrame, timings: Timings) -> RetrievalResult:
        assert self.store is not None
        evidence: list[Hit] = []
        for drug_id in frame.drug_ids:
            with timings.stage("scroll"):
                evidence.extend(overview_hits(self.store, drug_id, self.vocabulary, intro_only=True))
        with timings.stage("pack"):
            packed = pack_evidence(evidence, self.policy.max_context_tokens)
        with timings.stage("decide"):
            decision = decide(packed.kept)
        return RetrievalResult(decision, packed.kept, packed.omitted_ids, Route.DRUG_OVERVIEW)

    def _free_form(
        self, frame: QueryFrame, understanding: Understanding | None, timings: Timings
    ) -> RetrievalResult:
        assert self.store is not None
        with timings.stage("query"):
            query = self._free_form_query(frame, understanding)
            prior = section_prior(query, self.rules)
            query = expand(query, self.rules)
        catalog = self.catalog(timings)
        hits: list[Hit] = []
        dense: list[float] | None = []
        for drug_id in frame.drug_ids:
            info = catalog.drugs.get(drug_id) if catalog is not None else None
            keys = answer_sections(info.section_keys if info else (), self.vocabulary)
            flt = ChunkFilter(drug_id=drug_id, section_keys=keys or None, chunk_kind=ChunkKind.PROSE.value)
            found = search_candidates(
                self.store, self.embedder, query, flt, self.policy.free_form_pool, timings
            )
            hits.extend(found.hits)
            scores = self._dense_for_rerank(found, flt, timings)
            dense = dense + scores if dense is not None and scores is not None else None
        rule = self._rule(query, medical=False)
        return self._ranked(frame, hits, dense, Route.FREE_FORM, timings, query=query, prior=prior, rule=rule)

    def _free_form_query(self, frame: QueryFrame, understanding: Understanding | None) -> str:
        """The question without the names of the drugs searched (their mentions when the question was
        understood here, else their catalog names); the question itself when nothing else is left."""
        if understanding is not None:
            wanted = set(frame.drug_ids)
            spans = [(m.start, m.end) for m in understanding.mentions if wanted & set(m.drug_ids)]
        else:
            catalog = self.catalog()
            names = [n for d in frame.drug_ids for n in catalog.names_of(d)] if catalog is not None else []
            spans = name_spans(frame.query, names)
        return without_spans(frame.query, spans) or frame.query

    def _corpus_search(self, frame: QueryFrame, timings: Timings) -> RetrievalResult:
        assert self.store is not None
        if not frame.query.strip():
            return RetrievalResult(make_decision(R.DECISION_REASON_MISSING_REQUIRED_FIELD, detail="query"))
        flt = ChunkFilter(
            section_keys=(frame.section_key,) if frame.section_key else None, chunk_kind=ChunkKind.PROSE.value
        )
        found = search_candidates(
            self.store, self.embedder, frame.query, flt, self.policy.candidate_limit, timings
        )
        dense = self._dense_for_rerank(found, flt, timings)
        rule = self._rule(frame.query)
        return self._ranked(frame, found.hits, dense, Route.CORPUS_SEARCH, timings, rule=rule)

    def _rule(self, query: str, medical: bool = True) -> EvidenceRule:
        """The evidence rule of a search route: the question's medical terms (and the formulary names of
        the conditions it names) for a question naming no drug; its content words otherwise."""
        toks = tokenize(query)
        terms: list[Phrase] = []
        if medical:
            terms = list(medical_terms(toks, self.clinical, self.rules))
            terms += [f for spec in self.clinical.conditions_named(toks) for f in spec.forms]
        if not terms:
            terms = [phrase(t.raw) for t in content_words(toks, self.clinical, self.rules)]
        return EvidenceRule(Phrases(dict.fromkeys(terms)), loose=any(t.loose for t in toks))

    def _dense_for_rerank(self, found: Candidates, flt: ChunkFilter, timings: Timings) -> list[float] | None:
        assert self.store is not None
        if not (
            isinstance(self.reranker, GuardedReranker)
            and getattr(self.reranker.inner, "uses_dense_scores", False)
        ):
            return None
        return dense_scores(self.store, found, flt, timings)

    def _ranked(
        self,
        frame: QueryFrame,
        hits: list[Hit],
        dense: list[float] | None,
        route: Route,
        timings: Timings,
        query: str = "",
        prior: Mapping[str, float] | None = None,
        rule: EvidenceRule | None = None,
    ) -> RetrievalResult:
        ranked = rerank_and_pack(
            query or frame.query,
            hits,
            self.reranker,
            self.policy.rerank_top_k,
            self.policy.max_context_tokens,
            timings,
            dense,
            prior,
        )
        with timings.stage("decide"):
            kept, decision = decide_with(ranked.kept, rule or EvidenceRule())
        state = ranked.reranker_state
        return RetrievalResult(decision, kept, ranked.omitted_ids, route, reranker_state=state)

    # -------------------------------------------------------------- indication
    def lookup_indication(self, indication: str) -> IndicationResult:
        timings = Timings()
        if not self.loaded():
            return IndicationResult(make_decision(R.DECISION_REASON_CORPUS_NOT_LOADED), timings=timings)
        result = self._lookup(indication, timings)
        result.timings = timings
        return result

    def _lookup(self, indication: str, timings: Timings) -> IndicationResult:
        assert self.store is not None
        with timings.stage("scroll"):
            chunks = indication_chunks(self.store)
        toks = tokenize(indication)
        if only_generic(toks, self.clinical, self.rules):
            return IndicationResult(
                make_decision(R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE, detail=NO_CONDITION),
                [],
                indication=indication,
            )
        phrases = list(dict.fromkeys([indication.strip(), strip_indication_head(indication, self.rules)]))
        hits: list[Hit] = []
        with timings.stage("keyword"):
            for text in phrases:
                hits = keyword_pass(chunks, text)
                if hits:
                    break
        stage = IndicationStage.KEYWORD if hits else IndicationStage.NONE
        if not hits:
            with timings.stage("synonym"):
                named = self.clinical.only_conditions(toks, filler_phrases(self.clinical, self.rules))
                hits = synonym_pass(chunks, named)
            stage = IndicationStage.SYNONYM if hits else IndicationStage.NONE
        manifest = self.store.manifest()
        floor = manifest.indication_dense_floor if manifest is not None else 0.0
        if not hits and self.embedder is not None and floor > 0 and known_words(chunks) & {
            t.folded for t in content_words(toks, self.clinical, self.rules)
        }:  # a word of it occurs in some chi_dinh text: something may be near
            hits, best = dense_pass(
                self.store, self.embedder, indication, self.policy, floor, self.clinical.calibration.template,
                timings,
            )
            log.info("indication dense fallback: best %.4f, floor %.4f, %d kept", best, floor, len(hits))
            stage = IndicationStage.DENSE if hits else IndicationStage.NONE
        with timings.stage("group"):
            candidates = group_by_drug(hits, self.policy)
        if not candidates:
            return IndicationResult(
                make_decision(R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE),
                [],
                match_stage=stage,
                indication=indication,
            )
        with timings.stage("decide"):
            decision = decide([h for c in candidates for h in c.evidence])
        return IndicationResult(decision, candidates, match_stage=stage, indication=indication)

    # ----------------------------------------------------------------- patient
    def assess_patient(self, drug_ids: Sequence[str], facts: PatientFacts) -> AssessmentResult:
        timings = Timings()
        if not self.loaded():
            return AssessmentResult(make_decision(R.DECISION_REASON_CORPUS_NOT_LOADED), timings=timings)
        result = self._assess(drug_ids, facts, timings)
        result.timings = timings
        return result

    def _assess(self, drug_ids: Sequence[str], facts: PatientFacts, timings: Timings) -> AssessmentResult:
        assert self.store is not None
        catalog = self.catalog(timings)
        assert catalog is not None
        ctx = PatientContext(
            catalog, self.rules, self.clinical, self.catalogs.classes(catalog, self.clinical), self.policy,
            self.vocabulary,
        )
        with timings.stage("read_facts"):
            reading = read_patient(facts, ctx)
        with timings.stage("assess"):
            candidates = [assess_candidate(self.store, ctx, d, reading) for d in drug_ids]
        evidence = [h for c in candidates for f in c.facets for h in f.evidence]
        with timings.stage("decide"):
            if evidence:
                decision = decide(evidence)
            elif candidates and all(
                c.decision.reason == R.DECISION_REASON_DRUG_NOT_FOUND for c in candidates
            ):
                decision = make_decision(
                    R.DECISION_REASON_DRUG_NOT_FOUND, detail=", ".join(c.drug_id for c in candidates)
                )
            else:
                decision = make_decision(R.DECISION_REASON_INSUFFICIENT_EVIDENCE)
        return AssessmentResult(decision, candidates)


def retriever_for(app: App) -> Retriever:
    """A Retriever over the app's store and providers (cheap: the catalog cache is shared)."""
    return Retriever(
        store=app.store,
        vocabulary=app.vocabulary,
        policy=EvidencePolicy.from_settings(app.settings),
        embedder=app.embedder,
        reranker=app.reranker,
    )
