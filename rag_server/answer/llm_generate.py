"""LLM generators (RAG_GENERATOR=bedrock | cohere): the same `Draft` as the offline generator, from a model.

Both see only the usable evidence blocks (prose, no visual check: those are never paraphrased, the
pipeline shows their pages instead), each under its own number and the header
`[n] (drug_id=…; thuốc=…; mục=…)`, the presentation plan of `Plan` (a repair adds which blocks the previous
draft left out), and the question fenced as data.

* Bedrock (ConverseStream, the streamed text assembled): asked for JSON
  {"claims": [{"text", "sources"}], "evidence_sufficient"}, validated (providers/llm/schemas.py).
* Cohere (Chat with documents, id = the block number): each segment of the reply (sentence or line,
  answer/segments.py) is one claim citing the blocks of every citation overlapping it; a segment no
  citation overlaps is kept as a claim citing nothing, so grounding abstains with uncited_claim (never
  dropped). The reply "KHÔNG ĐỦ BẰNG CHỨNG" alone is evidence_sufficient false.

Numbers, citations and entailment are checked after either, as after the offline generator.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.answer.generate import usable
from rag_server.answer.model import Draft, DraftClaim, EvidenceBlock, GenerationRequest, Plan
from rag_server.answer.segments import segments
from rag_server.providers.base import MalformedOutput
from rag_server.providers.llm import prompts
from rag_server.providers.llm.bedrock_converse import BedrockConverse
from rag_server.providers.llm.cohere_chat import CitedText, CohereChat
from rag_server.providers.llm.schemas import DraftReply, parse
from rag_server.text.normalize import canonical


def header(block: EvidenceBlock) -> str:
    chunk = block.chunk
    return prompts.evidence_header(block.number, chunk.drug_id, chunk.drug_name, chunk.section_title,
                                   block.focus)


def evidence_text(blocks: Sequence[EvidenceBlock]) -> str:
    """The numbered blocks, each its header then its text, fenced as data."""
    return prompts.fence("evidence", "\n\n".join(f"{header(b)}\n{b.chunk.text}" for b in blocks))


def plan_text(plan: Plan, max_claims: int) -> str:
    return prompts.PLANS[plan.value].format(max_claims=max_claims)


def instructions(request: GenerationRequest) -> str:
    """The plan, then (a repair) the blocks the previous draft left out."""
    lines = [f"Plan: {plan_text(request.plan, request.max_claims)}"]
    if request.missing:
        lines.append(prompts.REPAIR.format(blocks=", ".join(f"[{n}]" for n in request.missing)))
    return "\n".join(lines)


class BedrockGenerator:
    name = "bedrock"
    blocking = True  # a network call: scheduled on the worker pool

    def __init__(self, chat: BedrockConverse) -> None:
        self.chat = chat

    def generate(self, request: GenerationRequest) -> Draft:
        blocks = [b for b in request.evidence if usable(b)]
        if not blocks:
            return Draft((), evidence_sufficient=False)
        prompt = "\n\n".join(
            [instructions(request), evidence_text(blocks), prompts.fence("question", request.question)]
        )
        reply = parse(self.chat.stream(prompts.GENERATE_SYSTEM, prompt), DraftReply, "generation")
        claims = tuple(DraftClaim(c.text, tuple(dict.fromkeys(c.sources))) for c in reply.claims)
        return Draft(claims, reply.evidence_sufficient)


class CohereGenerator:
    name = "cohere"
    blocking = True  # a network call: scheduled on the worker pool

    def __init__(self, chat: CohereChat) -> None:
        self.chat = chat

    def generate(self, request: GenerationRequest) -> Draft:
        blocks = [b for b in request.evidence if usable(b)]
        if not blocks:
            return Draft((), evidence_sufficient=False)
        documents = [(str(b.number), {"title": header(b), "text": b.chunk.text}) for b in blocks]
        prompt = "\n\n".join([instructions(request), prompts.fence("question", request.question)])
        reply = self.chat.chat(prompts.COHERE_SYSTEM, prompt, documents)
        if _folded(reply.text) == _folded(prompts.INSUFFICIENT):
            return Draft((), evidence_sufficient=False)
        claims = cited_claims(reply)
        return Draft(claims, evidence_sufficient=bool(claims))


def cited_claims(reply: CitedText) -> tuple[DraftClaim, ...]:
    """One claim per segment of the reply, citing (as block numbers, ascending) the documents of every
    citation overlapping it; none when no citation does."""
    claims: list[DraftClaim] = []
    for seg in segments(reply.text):
        overlapping = [c for c in reply.citations if c.start < seg.end and c.end > seg.start]
        cited = {doc for c in overlapping for doc in c.document_ids}
        try:
            numbers = sorted(int(doc) for doc in cited)
        except ValueError:  # the ids given were block numbers; CohereChat refuses any other
            raise MalformedOutput(f"cohere chat: a citation names no block: {sorted(cited)}") from None
        claims.append(DraftClaim(seg.text, tuple(numbers)))
    return tuple(claims)


def _folded(text: str) -> str:
    return canonical(text).strip(" .")
