"""Every terminal box of seed 003's error flow, produced for real: providers that fail, answer badly or
run out of budget end the Ask in their own reason, and no block is streamed before the final decision.
The scripted providers below implement the same protocols as the real ones (fictional evidence)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import collect, section  # type: ignore[import-not-found]

from rag_server.answer.model import Draft, DraftClaim, GenerationRequest
from rag_server.answer.pipeline import AnswerConfig, AskPipeline
from rag_server.domain import DecisionKind, Reason
from rag_server.providers.base import MalformedOutput, ProviderError
from rag_server.retrieval.corpus import Corpus
from rag_server.understanding.catalog import Catalog
from rag_server.understanding.frame import Prior, Reading
from rag_server.vocabulary.language import Language

pytestmark = pytest.mark.integration
QUESTION = "liều dùng của zentorin"  # two parts: "Người lớn: uống 2 viên 50 mg mỗi ngày." + renal/child part
FIRST = "Người lớn: uống 2 viên 50 mg mỗi ngày."


class FailingUnderstander:
    name = "scripted"
    blocking = False

    def __init__(self, error: Exception) -> None:
        self.error = error

    def understand(self, question: str, prior: Prior, catalog: Catalog | None, language: Language) -> Reading:
        raise self.error


@dataclass
class ScriptedGenerator:
    """Answers each call with the next scripted draft (or raises it)."""

    script: list[Draft | Exception]
    name: str = "scripted"
    blocking: bool = False
    requests: list[GenerationRequest] = field(default_factory=list)

    def generate(self, request: GenerationRequest) -> Draft:
        self.requests.append(request)
        step = self.script[min(len(self.requests), len(self.script)) - 1]
        if isinstance(step, Exception):
            raise step
        return step


class FailingJudge:
    name = "scripted"
    blocking = False

    def judge(self, *args: Any) -> Any:
        raise ProviderError("judge down")


def draft(*claims: tuple[str, tuple[int, ...]], sufficient: bool = True) -> Draft:
    return Draft(tuple(DraftClaim(text, sources) for text, sources in claims), sufficient)


async def _reason(pipeline: AskPipeline) -> Reason:
    _, blocks, final = await collect(pipeline.ask(QUESTION))
    if final.decision.kind != DecisionKind.ANSWERABLE:
        assert blocks == [], "a failed answer streams no block"
    return final.decision.reason


@pytest.mark.parametrize(
    ("error", "reason"),
    [(ProviderError("down"), Reason.UNDERSTANDING_PROVIDER_UNAVAILABLE),
     (MalformedOutput("not json"), Reason.UNDERSTANDING_MALFORMED_OUTPUT)],
)
async def test_understanding_failures(
    make_pipeline: Callable[..., AskPipeline], error: Exception, reason: Reason
) -> None:
    assert await _reason(make_pipeline(understander=FailingUnderstander(error))) == reason


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ([ProviderError("503")], Reason.PROVIDER_UNAVAILABLE),
        ([MalformedOutput("{")], Reason.MALFORMED_OUTPUT),
        ([draft(sufficient=False)], Reason.EVIDENCE_INSUFFICIENT),
        ([draft((FIRST, ()))], Reason.UNCITED_CLAIM),
        ([draft((FIRST, (9,)))], Reason.INVALID_CITATION),
        ([draft(("Người lớn: uống 3 viên 50 mg mỗi ngày.", (1,)))], Reason.UNGROUNDED_NUMBER),
        ([draft(("Người lớn nên dùng thuốc đều đặn.", (1,)))], Reason.UNSUPPORTED_CLAIM),
        ([draft((FIRST, (1,)))], Reason.INCOMPLETE_ANSWER),  # the renal/child part never comes
    ],
)
async def test_generation_failures(
    make_pipeline: Callable[..., AskPipeline], script: list[Draft | Exception], reason: Reason
) -> None:
    generator = ScriptedGenerator(script)
    assert await _reason(make_pipeline(generator=generator)) == reason
    if reason is Reason.EVIDENCE_INSUFFICIENT:
        assert len(generator.requests) == 2  # asked twice before giving up
    if reason is Reason.INCOMPLETE_ANSWER:
        assert generator.requests[1].missing == (2,)  # the repair names what was left out


async def test_one_repair_can_complete_an_answer(
    make_pipeline: Callable[..., AskPipeline], corpus: Corpus
) -> None:
    second = section(corpus, "zentorin", "lieu_luong_va_cach_dung").evidence[1].chunk
    rest = [s.strip() + "." for s in second.text.split(".") if s.strip()]
    full = draft((FIRST, (1,)), *((text, (2,)) for text in rest))
    generator = ScriptedGenerator([draft((FIRST, (1,))), full])
    assert await _reason(make_pipeline(generator=generator)) == Reason.GROUNDED_EVIDENCE_AVAILABLE


async def test_the_judge_failing_is_a_provider_failure(make_pipeline: Callable[..., AskPipeline]) -> None:
    assert await _reason(make_pipeline(judge=FailingJudge())) == Reason.PROVIDER_UNAVAILABLE


async def test_the_request_budget_runs_out(make_pipeline: Callable[..., AskPipeline]) -> None:
    pipeline = make_pipeline(config=AnswerConfig(max_provider_calls=1))
    assert await _reason(pipeline) == Reason.REQUEST_BUDGET_EXHAUSTED
    late = make_pipeline(config=AnswerConfig(timeout_s=30.0))
    assert await _reason(late) == Reason.GROUNDED_EVIDENCE_AVAILABLE
    _, _, final = await collect(make_pipeline().ask(QUESTION, "", 0.0))  # the client's deadline wins
    assert final.decision.reason == Reason.REQUEST_BUDGET_EXHAUSTED


SEED_003_TERMINALS = {
    "out_of_scope", "understanding_provider_unavailable", "understanding_malformed_output",
    "missing_required_field", "clarify_loop_exhausted", "parent_hydration_failed", "missing_provenance",
    "visual_verification_required", "request_budget_exhausted", "provider_unavailable", "malformed_output",
    "evidence_insufficient", "ungrounded_number", "invalid_citation", "uncited_claim", "unsupported_claim",
    "incomplete_answer", "grounded_evidence_available",
}


def test_every_terminal_box_has_its_own_reason_and_message() -> None:
    from rag_server.reasons import REASON_MESSAGES

    names = {r.name.lower() for r in Reason}
    assert names >= SEED_003_TERMINALS
    assert len({REASON_MESSAGES[Reason[n.upper()]] for n in SEED_003_TERMINALS}) == len(SEED_003_TERMINALS)
