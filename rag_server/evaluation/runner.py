"""Drive a RUNNING service over gRPC with a question set and collect one Outcome per question.

section / abstain / corpus questions -> RetrievalService/Retrieve{query}; indication and nonsense questions
-> RetrievalService/LookupIndication{indication}; patient questions -> RetrievalService/AssessPatient.
The service is a black box here: nothing in-process.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence

import grpc

from rag_server.client_channel import open_channel
from rag_server.evaluation.dataset import Question
from rag_server.evaluation.metrics import Outcome
from rag_server.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    common_pb2,
    retrieval_pb2,
    retrieval_pb2_grpc,
)

ProgressFn = Callable[[int, int], None]


def _enum_name(enum: object, value: int, prefix: str) -> str:
    try:
        name: str = enum.Name(value)  # type: ignore[attr-defined]
    except ValueError:
        return str(value)
    return name[len(prefix):] if name.startswith(prefix) else name


def decision_names(decision: common_pb2.Decision) -> tuple[str, str]:
    """(kind, reason) without the DECISION_KIND_/DECISION_REASON_ prefixes."""
    return (
        _enum_name(common_pb2.DecisionKind, decision.kind, "DECISION_KIND_"),
        _enum_name(common_pb2.DecisionReason, decision.reason, "DECISION_REASON_"),
    )


def outcome_from_retrieve(
    question: Question, response: retrieval_pb2.RetrieveResponse, millis: float = 0.0
) -> Outcome:
    kind, reason = decision_names(response.decision)
    top = response.evidence[0] if response.evidence else None
    return Outcome(
        question=question,
        got_drug_id=top.drug_id if top else "",
        got_section_key=top.section_key if top else "",
        decision_kind=kind,
        decision_reason=reason,
        route=_enum_name(retrieval_pb2.Route, response.route, "ROUTE_"),
        millis=millis,
        evidence_texts=(top.text,) if top else (),
    )


def patient_request(question: Question) -> retrieval_pb2.AssessPatientRequest:
    context = common_pb2.PatientContext()
    for name, value in question.patient:
        if isinstance(value, tuple):
            getattr(context, name).extend(value)
        else:
            setattr(context, name, value)
    return retrieval_pb2.AssessPatientRequest(drug_ids=list(question.drug_ids), patient=context)


def outcome_from_assessment(
    question: Question, response: retrieval_pb2.AssessPatientResponse, millis: float = 0.0
) -> Outcome:
    kind, reason = decision_names(response.decision)
    status = ""
    texts: tuple[str, ...] = ()
    wanted = f"FACET_{question.gold_facet.upper()}"
    first = question.drug_ids[0]
    for assessment in response.assessments:
        if assessment.drug_id != first:
            continue
        for facet in assessment.facets:
            if retrieval_pb2.Facet.Name(facet.facet) == wanted:
                status = _enum_name(retrieval_pb2.CandidateStatus, facet.status, "CANDIDATE_STATUS_")
                texts = tuple(e.text for e in facet.evidence)
    return Outcome(
        question=question,
        got_drug_id=first,
        decision_kind=kind,
        decision_reason=reason,
        route="PATIENT",
        millis=millis,
        facet_status=status,
        evidence_texts=texts,
    )


def outcome_from_indication(
    question: Question, response: retrieval_pb2.LookupIndicationResponse, millis: float = 0.0
) -> Outcome:
    kind, reason = decision_names(response.decision)
    ids: list[str] = []
    for candidate in response.candidates:
        if candidate.drug_id not in ids:
            ids.append(candidate.drug_id)
    return Outcome(
        question=question,
        got_drug_ids=tuple(ids),
        decision_kind=kind,
        decision_reason=reason,
        route=response.match_stage,
        millis=millis,
    )


async def followed(channel: grpc.aio.Channel, question: Question, timeout_s: float, start: float) -> Outcome:
    """A follow-up: its conversation's earlier questions through Ask, then the follow-up through Ask in that
    conversation, scored on what the answer cited first (the frame Ask acted on when it cited nothing)."""
    conversation_id = f"eval-{uuid.uuid4().hex[:16]}"
    answers = answer_pb2_grpc.AnswerServiceStub(channel)
    for earlier in question.conversation:
        async for _ in answers.Ask(answer_pb2.AskRequest(query=earlier, conversation_id=conversation_id),
                                   timeout=timeout_s):
            pass
    final: answer_pb2.AskFinal | None = None
    async for event in answers.Ask(
        answer_pb2.AskRequest(query=question.query, conversation_id=conversation_id), timeout=timeout_s
    ):
        if event.WhichOneof("event") == "final":
            final = event.final
    if final is None:
        millis = (time.perf_counter() - start) * 1000
        return Outcome(question=question, error="no final message", millis=millis)
    kind, reason = decision_names(final.decision)
    frame = final.frame
    if final.citations:
        drug_id, section_key = final.citations[0].drug_id, final.citations[0].section_key
    else:
        drug_id, section_key = (frame.drug_ids[0] if frame.drug_ids else ""), frame.section_key
    return Outcome(question=question, got_drug_id=drug_id, got_section_key=section_key, decision_kind=kind,
                   decision_reason=reason, route="FOLLOWUP", millis=(time.perf_counter() - start) * 1000)


async def ask(
    stub: retrieval_pb2_grpc.RetrievalServiceStub, question: Question, timeout_s: float = 60.0,
    channel: grpc.aio.Channel | None = None,
) -> Outcome:
    """One question -> one Outcome; an RPC error becomes Outcome.error (never raised)."""
    start = time.perf_counter()
    try:
        if question.conversation and channel is not None:
            return await followed(channel, question, timeout_s, start)
        if question.kind in ("indication", "nonsense_indication"):
            ind = await stub.LookupIndication(
                retrieval_pb2.LookupIndicationRequest(indication=question.indication_text), timeout=timeout_s
            )
            return outcome_from_indication(question, ind, (time.perf_counter() - start) * 1000)
        if question.kind == "patient":
            assessed = await stub.AssessPatient(patient_request(question), timeout=timeout_s)
            return outcome_from_assessment(question, assessed, (time.perf_counter() - start) * 1000)
        ret = await stub.Retrieve(
            retrieval_pb2.RetrieveRequest(query=question.query), timeout=timeout_s
        )
        return outcome_from_retrieve(question, ret, (time.perf_counter() - start) * 1000)
    except grpc.aio.AioRpcError as exc:
        return Outcome(
            question=question,
            error=f"{exc.code().name}: {exc.details()}",
            error_code=exc.code().name,
            millis=(time.perf_counter() - start) * 1000,
        )


def warmup_questions(questions: Sequence[Question]) -> list[Question]:
    """One question of each kind, plus a free-form one: the first calls may load models lazily."""
    picked: dict[str, Question] = {}
    for q in questions:
        picked.setdefault(q.kind, q)
        if "free_form" in q.style:
            picked.setdefault("free_form", q)
    return list(picked.values())


async def run_eval(
    target: str,
    questions: Sequence[Question],
    concurrency: int = 4,
    timeout_s: float = 60.0,
    connect_timeout_s: float = 10.0,
    progress: ProgressFn | None = None,
    warmup: bool = True,
    warmup_timeout_s: float = 300.0,
) -> list[Outcome]:
    """Ask every question of `questions` at `target` (host:port); outcomes keep the input order.

    With `warmup`, a few questions are asked once first (unscored, sequentially, with a long deadline) so
    a lazily loaded model is not scored as a wrong answer; the scored run then uses `timeout_s`."""
    async with open_channel(target) as channel:
        try:
            await asyncio.wait_for(channel.channel_ready(), connect_timeout_s)
        except TimeoutError as exc:
            raise ConnectionError(f"no gRPC server answering at {target}") from exc
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        if warmup:
            for question in warmup_questions(questions):
                await ask(stub, question, warmup_timeout_s, channel)
        gate = asyncio.Semaphore(max(1, concurrency))
        done = 0

        async def one(question: Question) -> Outcome:
            nonlocal done
            async with gate:
                outcome = await ask(stub, question, timeout_s, channel)
            done += 1
            if progress is not None:
                progress(done, len(questions))
            return outcome

        return list(await asyncio.gather(*(one(q) for q in questions)))
