"""Entailment: is each claim supported by the blocks it cites, and is the answer complete?

The offline judge (default) is strict and deterministic: a claim must be a normalised substring of one of
the chunks it cites (case, spacing and Unicode form ignored, nothing else). Completeness: a plan that
presents whole sections (WHOLE_SECTION, OVERVIEW, URGENT) must cover every segment of every prose block it
was given (but a block of a patient fact beside the section, which shows what the fact matched); the other
plans are complete when they say anything at all. An LLM judge (llm_entail.py) answers
the same `Judgement`.

`locate` finds each claim's supporting text inside a cited chunk for the client to highlight: the claim
itself when it is a substring, else the segment of the chunk sharing the most words with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rag_server.answer.model import Draft, EvidenceBlock, Plan, Support
from rag_server.answer.segments import Segment, segments
from rag_server.domain import Chunk, ChunkKind, in_visual_span
from rag_server.text.normalize import normalised

WHOLE_PLANS = frozenset({Plan.WHOLE_SECTION, Plan.OVERVIEW, Plan.URGENT})


@dataclass(frozen=True)
class Judgement:
    unsupported: tuple[int, ...]  # claim indexes not entailed by their cited blocks
    complete: bool
    missing: tuple[int, ...] = ()  # evidence block numbers the answer should have used


class Judge(Protocol):
    name: str
    blocking: bool  # calls a network provider: scheduled on the worker pool, never inline

    def judge(self, draft: Draft, evidence: Sequence[EvidenceBlock], plan: Plan, question: str) -> Judgement:
        """Raises ProviderError (provider failure) / MalformedOutput (unusable answer): LLM judges."""


def find_in(claim: str, chunk_text: str) -> tuple[int, int] | None:
    """[start, end) of `claim` inside `chunk_text`, comparing normalised forms; None when absent."""
    at = chunk_text.find(claim) if claim.strip() else -1
    if at >= 0:  # verbatim (every extractive claim): no normalising needed
        return at, at + len(claim)
    needle, _ = normalised(claim)
    hay, where = normalised(chunk_text)
    if not needle:
        return None
    at = hay.find(needle)
    if at < 0:
        return None
    return where[at], where[at + len(needle) - 1] + 1


def locate(claim: str, chunk: Chunk) -> Support:
    found = find_in(claim, chunk.text)
    if found is not None:
        return Support(chunk.chunk_id, *found)
    words = Segment(claim, 0, len(claim)).words()
    parts = segments(chunk.text)
    best = max(parts, key=lambda s: len(words & s.words()), default=None)
    if best is None:
        return Support(chunk.chunk_id, 0, len(chunk.text))
    return Support(chunk.chunk_id, best.start, best.end)


class OfflineJudge:
    name = "offline"
    blocking = False

    def judge(self, draft: Draft, evidence: Sequence[EvidenceBlock], plan: Plan, question: str) -> Judgement:
        unsupported = tuple(
            i
            for i, claim in enumerate(draft.claims)
            if not any(find_in(claim.text, evidence[s - 1].chunk.text) for s in claim.sources)
        )
        missing: list[int] = []
        if plan in WHOLE_PLANS:
            for block in evidence:
                if block.chunk.chunk_kind is not ChunkKind.PROSE or block.chunk.requires_visual_check:
                    continue
                if block.facts:  # a patient fact's block beside the section: what the fact matched
                    continue
                said = " \n ".join(normalised(c.text)[0] for c in draft.claims if block.number in c.sources)
                shown = [
                    s for s in segments(block.chunk.text) if not in_visual_span(block.chunk, s.start, s.end)
                ]
                if any(normalised(s.text)[0] not in said for s in shown):
                    missing.append(block.number)
        complete = not missing and bool(draft.claims)
        return Judgement(unsupported, complete, tuple(missing))
