"""Domain -> protobuf (and the few protobuf -> domain) conversions, in one place."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag_server.domain import (
    ChunkKind,
    Decision,
    FactMatch,
    Hit,
    MatchKind,
    PageBox,
    ScoreKind,
    SourceRef,
    TableView,
)
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.retrieval.results import (
    AssessmentResult,
    CandidateResult,
    CandidateStatus,
    Facet,
    IndicationCandidate,
    IndicationResult,
    RetrievalResult,
    Route,
)
from rag_server.retrieval.timing import Timings
from rag_server.understanding.catalog import DrugInfo, MatchStage, Mention
from rag_server.understanding.frame import (
    AskedTerm,
    Group,
    PatientFacts,
    QueryFrame,
    Situation,
    SituationKind,
    TurnType,
)
from rag_server.understanding.medications import MedicationName

_SCORE_KIND = {
    ScoreKind.EXACT: pb.SCORE_KIND_EXACT,
    ScoreKind.LEXICAL: pb.SCORE_KIND_LEXICAL,
    ScoreKind.DENSE: pb.SCORE_KIND_DENSE,
    ScoreKind.FUSED: pb.SCORE_KIND_FUSED,
    ScoreKind.RERANK: pb.SCORE_KIND_RERANK,
}
_CHUNK_KIND = {ChunkKind.PROSE: pb.CHUNK_KIND_PROSE, ChunkKind.BLOCK: pb.CHUNK_KIND_BLOCK}
MATCH_KIND = {k: pb.MatchKind.Value(f"MATCH_KIND_{k.name}") for k in MatchKind}
_TURN = {t: pb.TurnType.Value(f"TURN_TYPE_{t.name}") for t in TurnType}
_TURN_BACK = {v: k for k, v in _TURN.items()}
_ROUTE = {r: rpb.Route.Value(f"ROUTE_{r.name}") for r in Route}
_FACET = {f: rpb.Facet.Value(f"FACET_{f.name}") for f in Facet}
_STATUS = {s: rpb.CandidateStatus.Value(f"CANDIDATE_STATUS_{s.name}") for s in CandidateStatus}


def evidence(hit: Hit) -> pb.Evidence:
    c = hit.chunk
    return pb.Evidence(
        chunk_id=c.chunk_id,
        drug_id=c.drug_id,
        drug_name=c.drug_name,
        section_key=c.section_key,
        section_title=c.section_title,
        part_index=c.part_index,
        text=c.text,
        score=hit.score,
        score_kind=_SCORE_KIND[hit.score_kind],
        source_refs=[source_ref(r) for r in c.source_refs],
        requires_visual_check=c.requires_visual_check,
        chunk_kind=_CHUNK_KIND[c.chunk_kind],
        table_rows=table_rows(c.table_rows),
        visual_spans=[pb.TextSpan(start=start, end=end) for start, end in c.visual_spans],
    )


def source_ref(r: SourceRef) -> pb.SourceRef:
    return pb.SourceRef(document_id=r.document_id, physical_page=r.physical_page, printed_page=r.printed_page)


def table_rows(rows: Sequence[Sequence[str]]) -> list[pb.TableRow]:
    return [pb.TableRow(cells=list(row)) for row in rows]


def page_box(b: PageBox) -> pb.PageBox:
    return pb.PageBox(
        physical_page=b.physical_page, printed_page=b.printed_page, x0=b.x0, y0=b.y0, x1=b.x1, y1=b.y1
    )


def claim_support(
    chunk_id: str, start: int, end: int, physical_page: int = 0, boxes: Sequence[PageBox] = ()
) -> pb.ClaimSupport:
    """A claim's support in one chunk: its span, the page it starts on and the boxes of its lines (the
    first page is the first box's when not given)."""
    first = physical_page or (boxes[0].physical_page if boxes else 0)
    return pb.ClaimSupport(
        chunk_id=chunk_id, start=start, end=end, physical_page=first, boxes=[page_box(b) for b in boxes]
    )


def table_view(t: TableView) -> pb.TableView:
    return pb.TableView(
        chunk_id=t.chunk_id,
        rows=table_rows(t.rows),
        image_png=t.image_png,
        pages=[source_ref(r) for r in t.pages],
    )


def decision(d: Decision) -> pb.Decision:
    return pb.Decision(
        kind=int(d.kind),  # type: ignore[arg-type]
        reason=int(d.reason),  # type: ignore[arg-type]
        message=d.message,
        pages=[source_ref(r) for r in d.pages],
        visual_check_chunk_ids=list(d.visual_check_chunk_ids),
    )


def fact_match(m: FactMatch) -> rpb.FacetMatch:
    return rpb.FacetMatch(
        fact=m.fact,
        name=m.name,
        matched=m.matched,
        match_kind=MATCH_KIND[m.kind],
        chunk_id=m.chunk_id,
        detail=m.detail,
    )


def evidence_list(hits: Iterable[Hit]) -> list[pb.Evidence]:
    return [evidence(h) for h in hits]


def timings(t: Timings) -> list[pb.StageTiming]:
    return [pb.StageTiming(stage=name, millis=round(ms, 3)) for name, ms in t.stages]


_GROUP = {g: pb.PatientGroup.Value(f"PATIENT_GROUP_{g.value.upper()}") for g in Group}
_SITUATION = {k: pb.SituationKind.Value(f"SITUATION_KIND_{k.name}") for k in SituationKind}


def patient(facts: PatientFacts) -> pb.PatientContext:
    return pb.PatientContext(
        current_medications=list(facts.current_medications),
        conditions=list(facts.conditions),
        age_years=facts.age_years or 0,
        pregnant=facts.pregnant,
        breastfeeding=facts.breastfeeding,
        renal_impairment=facts.renal_impairment,
        hepatic_impairment=facts.hepatic_impairment,
        allergies=list(facts.allergies),
        age_months=facts.age_months or 0,
        weight_kg=facts.weight_kg or 0.0,
        groups=[_GROUP[g] for g in facts.groups],
    )


def patient_from_proto(msg: pb.PatientContext) -> PatientFacts:
    """A caller's patient facts (groups are derived by the service, never taken from the request)."""
    return PatientFacts(
        current_medications=_distinct(msg.current_medications),
        conditions=_distinct(msg.conditions),
        age_years=msg.age_years or None,
        pregnant=msg.pregnant,
        breastfeeding=msg.breastfeeding,
        renal_impairment=msg.renal_impairment,
        hepatic_impairment=msg.hepatic_impairment,
        allergies=_distinct(msg.allergies),
        age_months=msg.age_months or None,
        weight_kg=msg.weight_kg or None,
    )


def _distinct(values: Iterable[str]) -> tuple[str, ...]:
    """Non-empty values, stripped, each once (a list repeating one entry costs no more than one)."""
    return tuple(dict.fromkeys(v.strip() for v in values if v.strip()))


_STAGE_KIND = {
    MatchStage.EXACT: pb.MATCH_KIND_EXACT,
    MatchStage.FUZZY: pb.MATCH_KIND_TYPO,
    MatchStage.PREFIX: pb.MATCH_KIND_PREFIX,
}


def drug_mention(m: Mention) -> pb.DrugMention:
    return pb.DrugMention(
        text=m.text,
        drug_ids=list(m.drug_ids),
        match_kind=_STAGE_KIND[m.stage],
        distance=m.distance,
        start=m.char_start,
        end=m.char_end,
    )


def asked_term(t: AskedTerm) -> pb.AskedTerm:
    return pb.AskedTerm(text=t.text, forms=list(t.forms), start=t.start, end=t.end, known=t.known)


def medication(m: MedicationName) -> pb.MedicationMention:
    kind = (
        _STAGE_KIND.get(m.stage, pb.MATCH_KIND_UNSPECIFIED)
        if m.stage is not None
        else pb.MATCH_KIND_UNSPECIFIED
    )
    return pb.MedicationMention(entry=m.entry, name=m.name, drug_id=m.drug_id, match_kind=kind)


def situation(s: Situation) -> pb.Situation:
    return pb.Situation(
        kind=_SITUATION[s.kind],
        parts=[pb.SituationPart(part=p.part, text=p.text, start=p.start, end=p.end) for p in s.parts],
    )


def frame(f: QueryFrame) -> pb.QueryFrame:
    cue = f.section_cue
    return pb.QueryFrame(
        turn_type=_TURN[f.turn_type],
        drug_ids=list(f.drug_ids),
        section_key=f.section_key,
        indication=f.indication,
        patient=patient(f.patient),
        missing_fields=list(f.missing_fields),
        query=f.query,
        drug_mentions=[drug_mention(m) for m in f.drug_mentions],
        section_cue=pb.SectionCue(
            section_key=cue.section_key, text=cue.text, start=cue.start, end=cue.end, weak=cue.weak
        )
        if cue is not None
        else None,
        asked_terms=[asked_term(t) for t in f.asked_terms],
        conditions=list(f.conditions),
        medications=[medication(m) for m in f.medications],
        situation=situation(f.situation),
        carried=pb.CarriedContext(drug_ids=list(f.carried.drug_ids), section_key=f.carried.section_key)
        if f.carried
        else None,
        effect=asked_term(f.effect) if f.effect is not None else None,
    )


def frame_from_proto(msg: pb.QueryFrame, query: str = "") -> QueryFrame:
    """A caller's frame; an unspecified turn type is inferred from the fields that are set (what only the
    service reads, such as the asked terms and the situation, is never taken from a request)."""
    turn = _TURN_BACK.get(msg.turn_type)
    if turn is None:
        if msg.indication and not msg.drug_ids:
            turn = TurnType.INDICATION_LOOKUP
        elif msg.drug_ids and msg.section_key:
            turn = TurnType.SECTION_QUESTION
        elif msg.drug_ids and not (msg.query or query):
            turn = TurnType.DRUG_OVERVIEW
        else:
            turn = TurnType.FREE_FORM
    return QueryFrame(
        turn_type=turn,
        query=msg.query or query,
        drug_ids=tuple(dict.fromkeys(msg.drug_ids)),
        section_key=msg.section_key,
        indication=msg.indication,
        patient=patient_from_proto(msg.patient),
        missing_fields=tuple(msg.missing_fields),
        search_text=msg.query or query,
    )


def retrieve_response(result: RetrievalResult) -> rpb.RetrieveResponse:
    return rpb.RetrieveResponse(
        decision=decision(result.decision),
        evidence=evidence_list(result.evidence),
        omitted_evidence_ids=result.omitted_ids,
        route=_ROUTE[result.route],
        timings=timings(result.timings),
        frame=frame(result.frame) if result.frame is not None else None,
        reranker_state=result.reranker_state.value if result.reranker_state is not None else "",
    )


def indication_candidate(c: IndicationCandidate) -> rpb.IndicationCandidate:
    return rpb.IndicationCandidate(
        drug_id=c.drug_id,
        drug_name=c.drug_name,
        score=c.score,
        score_kind=_SCORE_KIND[c.score_kind],
        evidence=evidence_list(c.evidence),
    )


def indication_response(result: IndicationResult) -> rpb.LookupIndicationResponse:
    return rpb.LookupIndicationResponse(
        decision=decision(result.decision),
        candidates=[indication_candidate(c) for c in result.candidates],
        timings=timings(result.timings),
        match_stage=result.match_stage,
    )


def candidate_assessment(c: CandidateResult) -> rpb.CandidateAssessment:
    return rpb.CandidateAssessment(
        drug_id=c.drug_id,
        drug_name=c.drug_name,
        decision=decision(c.decision),
        facets=[
            rpb.FacetAssessment(
                facet=_FACET[f.facet],
                status=_STATUS[f.status],
                evidence=evidence_list(f.evidence),
                query=f.query,
                matches=[fact_match(m) for m in f.matches],
            )
            for f in c.facets
        ],
    )


def assessment_response(result: AssessmentResult) -> rpb.AssessPatientResponse:
    return rpb.AssessPatientResponse(
        decision=decision(result.decision),
        assessments=[candidate_assessment(c) for c in result.candidates],
        timings=timings(result.timings),
    )


def route(r: Route) -> rpb.Route.ValueType:
    return _ROUTE[r]


def drug_list(drugs: Sequence[DrugInfo]) -> rpb.ListDrugsResponse:
    return rpb.ListDrugsResponse(
        drugs=[
            rpb.DrugSummary(drug_id=d.drug_id, display_name=d.display_name, section_keys=list(d.section_keys))
            for d in drugs
        ]
    )
