"""An LLM entailment judge (RAG_JUDGE=bedrock, Converse): the same `Judgement` as the offline judge.

The model sees the whole selected evidence set (the usable blocks, numbered as the generator saw them),
then each claim by index with only the block(s) it cites, the plan's completeness rule and the question
fenced as data. It answers {"unsupported": [claim indexes], "complete": bool, "missing_evidence": [block
numbers]}; anything else is MalformedOutput: not that JSON, a claim index that is no claim, a block number
that is no usable block, or "complete" with blocks still missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.answer.entail import WHOLE_PLANS, Judgement
from rag_server.answer.generate import usable
from rag_server.answer.llm_generate import evidence_text, header, plan_text
from rag_server.answer.model import Draft, EvidenceBlock, Plan
from rag_server.providers.base import MalformedOutput
from rag_server.providers.llm import prompts
from rag_server.providers.llm.bedrock_converse import BedrockConverse
from rag_server.providers.llm.schemas import JudgementReply, parse


def claims_text(draft: Draft, evidence: Sequence[EvidenceBlock]) -> str:
    """Each claim by index, then the text of only the blocks it cites (fenced as data)."""
    by_number = {b.number: b for b in evidence}
    parts: list[str] = []
    for index, claim in enumerate(draft.claims):
        cited = [by_number[n] for n in claim.sources if n in by_number]
        lines = [f"claim_index={index}: {claim.text}", "cited:"]
        lines += [f"{header(b)}\n{b.chunk.text}" for b in cited] or ["(nothing)"]
        parts.append("\n".join(lines))
    return prompts.fence("claims", "\n\n".join(parts))


class BedrockJudge:
    name = "bedrock"
    blocking = True  # a network call: scheduled on the worker pool

    def __init__(self, chat: BedrockConverse) -> None:
        self.chat = chat

    def judge(self, draft: Draft, evidence: Sequence[EvidenceBlock], plan: Plan, question: str) -> Judgement:
        shown = [b for b in evidence if usable(b)]
        rule = prompts.COMPLETE_WHOLE if plan in WHOLE_PLANS else prompts.COMPLETE_ANSWERED
        prompt = "\n\n".join([
            f"Plan: {plan_text(plan, len(draft.claims))}\nCompleteness: {rule}",
            evidence_text(shown),
            claims_text(draft, evidence),
            prompts.fence("question", question),
        ])
        reply = parse(self.chat.complete(prompts.JUDGE_SYSTEM, prompt), JudgementReply, "entailment")
        bad_claims = [i for i in reply.unsupported if i >= len(draft.claims)]
        if bad_claims:
            raise MalformedOutput(f"entailment: claim index {bad_claims[0]} of {len(draft.claims)} claims")
        numbers = {b.number for b in shown}
        bad_blocks = [n for n in reply.missing_evidence if n not in numbers]
        if bad_blocks:
            raise MalformedOutput(f"entailment: missing block [{bad_blocks[0]}] is no evidence block shown")
        if reply.complete and reply.missing_evidence:
            raise MalformedOutput("entailment: complete, yet blocks are missing")
        return Judgement(
            tuple(sorted(set(reply.unsupported))), reply.complete, tuple(sorted(set(reply.missing_evidence)))
        )
