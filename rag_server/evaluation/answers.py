"""Answer measures for `rag-server eval --answers`: every question is also sent to AnswerService/Ask and
its streamed answer is checked from the outside, against the evidence the service itself serves:

* decision right: a question with an answer is answered (ANSWERABLE / VERIFY_PDF); an abstain or nonsense
  question is not, with one of the expected decisions;
* citations right: section questions cite the gold drug's gold section; indication questions cite a gold
  drug;
* numbers grounded: every number of every claim is in the text of a chunk that claim cites (the chunk
  texts are fetched with Retrieve{drug_id, section_key}, independently of the Ask);
* spans verbatim: every claim's support span lies inside its chunk and is that chunk's text;
* whole section: a section question's answer cites every prose part of the section;
* abstain reason right: when an abstain question names reasons, the decision has one of them.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from rag_server.client_channel import open_channel
from rag_server.evaluation.dataset import Question
from rag_server.evaluation.metrics import USABLE_KINDS, Rate, percentile
from rag_server.evaluation.runner import decision_names
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc, retrieval_pb2, retrieval_pb2_grpc

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_KINDS = frozenset({"ANSWERABLE", "ABSTAIN", "VERIFY_PDF", "CLARIFY"})


@dataclass(frozen=True)
class ClaimSeen:
    text: str
    source_ids: tuple[str, ...]
    spans: tuple[tuple[str, int, int], ...]  # (chunk_id, start, end)


@dataclass
class AnswerOutcome:
    question: Question
    decision_kind: str = ""
    decision_reason: str = ""
    claims: list[ClaimSeen] = field(default_factory=list)
    cited: list[tuple[str, str, str]] = field(default_factory=list)  # (chunk_id, drug_id, section_key)
    chunk_texts: dict[str, str] = field(default_factory=dict)
    section_parts: tuple[str, ...] = ()  # section questions: the prose chunk ids of the gold section
    error: str = ""
    error_code: str = ""  # the gRPC status name when the call failed (an expected INVALID_ARGUMENT ...)
    millis: float = 0.0
    first_block_ms: float = 0.0

    @property
    def expected_error(self) -> bool:
        return bool(self.error_code) and self.error_code in self.question.expect_decision


@dataclass
class AnswerReport:
    decision: Rate = field(default_factory=Rate)
    citations: Rate = field(default_factory=Rate)
    numbers: Rate = field(default_factory=Rate)
    spans: Rate = field(default_factory=Rate)
    whole_section: Rate = field(default_factory=Rate)
    abstain_reason: Rate = field(default_factory=Rate)
    errors: int = 0
    p50_ms: float = 0.0
    first_block_p50_ms: float = 0.0
    misses: list[tuple[str, str, str]] = field(default_factory=list)  # (id, measure, detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision_right": self.decision.to_dict(),
            "citations_right": self.citations.to_dict(),
            "numbers_grounded": self.numbers.to_dict(),
            "spans_verbatim": self.spans.to_dict(),
            "whole_section_present": self.whole_section.to_dict(),
            "abstain_reason_right": self.abstain_reason.to_dict(),
            "errors": self.errors,
            "latency_ms": {
                "p50": round(self.p50_ms, 2), "first_block_p50": round(self.first_block_p50_ms, 2)
            },
            "misses": [{"id": i, "measure": m, "detail": d} for i, m, d in self.misses],
        }


def answered(o: AnswerOutcome) -> bool:
    return o.decision_kind in USABLE_KINDS


def decision_right(o: AnswerOutcome) -> bool:
    q = o.question
    if o.error:
        return o.expected_error
    if q.kind in ("abstain", "nonsense_indication"):
        expected = set(q.expect_decision)
        if q.kind == "nonsense_indication":
            return not answered(o)
        return not answered(o) and bool(expected & {o.decision_kind, o.decision_reason})
    return answered(o)


def citations_right(o: AnswerOutcome) -> bool:
    q = o.question
    if q.kind == "section":
        # the first citation is the gold section (a pointer or pooled section may follow it)
        return bool(o.cited) and o.cited[0][1:] == (q.gold_drug_id, q.gold_section_key)
    if q.kind == "indication":
        return bool({d for _, d, _ in o.cited} & set(q.gold_drug_ids))
    return bool(o.cited)


def numbers_grounded(o: AnswerOutcome) -> bool:
    for claim in o.claims:
        cited = " ".join(o.chunk_texts.get(cid, "") for cid in claim.source_ids)
        normal = cited.replace(",", ".")
        if any(n.replace(",", ".") not in normal for n in _NUMBER.findall(claim.text)):
            return False
    return True


def spans_verbatim(o: AnswerOutcome) -> bool:
    for claim in o.claims:
        for chunk_id, start, end in claim.spans:
            text = o.chunk_texts.get(chunk_id, "")
            if not 0 <= start < end <= len(text) or not text[start:end].strip():
                return False
    return True


def whole_section(o: AnswerOutcome) -> bool:
    cited = {cid for cid, _, _ in o.cited}
    return bool(o.section_parts) and set(o.section_parts) <= cited


def summarize_answers(outcomes: Sequence[AnswerOutcome]) -> AnswerReport:
    report = AnswerReport()
    for o in outcomes:
        if o.error and not o.expected_error:
            report.errors += 1
        checks: list[tuple[str, Rate, bool]] = [("decision", report.decision, decision_right(o))]
        if answered(o) and o.question.kind in ("section", "indication", "corpus", "patient"):
            checks += [
                ("citations", report.citations, citations_right(o)),
                ("numbers", report.numbers, numbers_grounded(o)),
                ("spans", report.spans, spans_verbatim(o)),
            ]
            if o.question.kind == "section" and o.decision_kind == "ANSWERABLE" and citations_right(o):
                # the right section was answered: all of it (a wrong section is a citation miss already)
                checks.append(("whole_section", report.whole_section, whole_section(o)))
        reasons = [e for e in o.question.expect_decision if e not in _KINDS]
        if o.question.kind == "abstain" and reasons and not o.error:
            checks.append(("abstain_reason", report.abstain_reason, o.decision_reason in reasons))
        for name, rate, ok in checks:
            rate.add(ok)
            if not ok:
                report.misses.append((o.question.id, name, f"{o.decision_kind}/{o.decision_reason}"))
    report.p50_ms = percentile([o.millis for o in outcomes if o.millis], 50)
    report.first_block_p50_ms = percentile([o.first_block_ms for o in outcomes if o.first_block_ms], 50)
    return report


async def ask_one(
    answers: answer_pb2_grpc.AnswerServiceStub,
    retrieval: retrieval_pb2_grpc.RetrievalServiceStub,
    question: Question,
    timeout_s: float,
) -> AnswerOutcome:
    outcome = AnswerOutcome(question)
    began = time.perf_counter()
    try:
        async for event in answers.Ask(answer_pb2.AskRequest(query=question.query), timeout=timeout_s):
            kind = event.WhichOneof("event")
            if kind == "block" and not outcome.first_block_ms:
                outcome.first_block_ms = (time.perf_counter() - began) * 1000
            if kind == "block":
                outcome.claims += [
                    ClaimSeen(c.text, tuple(c.source_ids),
                              tuple((s.chunk_id, s.start, s.end) for s in c.support))
                    for c in event.block.claims
                ]
            elif kind == "final":
                final = event.final
                outcome.decision_kind, outcome.decision_reason = decision_names(final.decision)
                outcome.cited = [(c.chunk_id, c.drug_id, c.section_key) for c in final.citations]
        outcome.millis = (time.perf_counter() - began) * 1000
        await _fetch_texts(retrieval, outcome, timeout_s)
    except grpc.aio.AioRpcError as exc:
        outcome.error = f"{exc.code().name}: {exc.details()}"
        outcome.error_code = exc.code().name
    return outcome


async def _fetch_texts(
    stub: retrieval_pb2_grpc.RetrievalServiceStub, o: AnswerOutcome, timeout_s: float
) -> None:
    """The texts of the cited chunks and, for a section question, its prose parts: from Retrieve."""
    pairs = {(d, s) for _, d, s in o.cited}
    q = o.question
    if q.kind == "section" and q.gold_drug_id:
        pairs.add((q.gold_drug_id, q.gold_section_key))
    for drug_id, section_key in sorted(pairs):
        reply = await stub.Retrieve(
            retrieval_pb2.RetrieveRequest(drug_id=drug_id, section_key=section_key), timeout=timeout_s
        )
        for e in reply.evidence:
            o.chunk_texts[e.chunk_id] = e.text
        if (drug_id, section_key) == (q.gold_drug_id, q.gold_section_key):
            o.section_parts = tuple(
                e.chunk_id for e in reply.evidence
                if e.section_key == section_key and e.chunk_kind == 1 and not e.requires_visual_check
            )


async def run_answers(
    target: str, questions: Sequence[Question], concurrency: int = 4, timeout_s: float = 60.0
) -> list[AnswerOutcome]:
    async with open_channel(target) as channel:
        answers = answer_pb2_grpc.AnswerServiceStub(channel)
        retrieval = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(question: Question) -> AnswerOutcome:
            async with gate:
                return await ask_one(answers, retrieval, question, timeout_s)

        return list(await asyncio.gather(*(one(q) for q in questions if q.kind != "patient")))
