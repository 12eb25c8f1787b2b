"""Generation decides only how evidence is presented (seed 002). The offline generator (default) is
extractive and deterministic: each claim is one sentence or list item of the evidence block it cites,
copied verbatim.

* WHOLE_SECTION / OVERVIEW / URGENT: every segment of every prose block, in the order given (part order),
  never truncated;
* MOST_RELEVANT: the segments sharing the most words with the question (and the block's focus words),
  at most `max_claims`, shown in evidence order;
* INDICATION_LIST / PATIENT_FACETS: per block, the segments naming its focus (the condition, the patient
  fact), else its first segment.

Blocks that need a visual check are never paraphrased: no claim is made from them (the pipeline shows a
VERIFY_PDF notice with their pages instead). LLM generators (llm_generate.py) return the same `Draft`.
"""

from __future__ import annotations

from typing import Protocol

from rag_server.answer.model import Draft, DraftClaim, EvidenceBlock, GenerationRequest, Plan
from rag_server.answer.segments import Segment, segments
from rag_server.domain import ChunkKind
from rag_server.text.match import word_forms

_WHOLE = frozenset({Plan.WHOLE_SECTION, Plan.OVERVIEW, Plan.URGENT})
_FOCUSED = frozenset({Plan.INDICATION_LIST, Plan.PATIENT_FACETS})


class Generator(Protocol):
    name: str

    def generate(self, request: GenerationRequest) -> Draft:
        """Raises ProviderError on a provider failure, MalformedOutput on output it cannot read."""


def usable(block: EvidenceBlock) -> bool:
    return block.chunk.chunk_kind is ChunkKind.PROSE and not block.chunk.requires_visual_check


def _folded_words(text: str) -> set[str]:
    return {f for raw, f in word_forms(text) if any(c.isalnum() for c in raw)}


class OfflineGenerator:
    name = "offline"

    def __init__(self, stopwords: frozenset[str] = frozenset()) -> None:
        self.stopwords = stopwords

    def generate(self, request: GenerationRequest) -> Draft:
        blocks = [b for b in request.evidence if usable(b)]
        if request.plan in _WHOLE:
            claims = [DraftClaim(s.text, (b.number,)) for b in blocks for s in segments(b.chunk.text)]
        elif request.plan in _FOCUSED:
            claims = [c for b in blocks for c in self._focused(b)]
        else:
            claims = self._most_relevant(request, blocks)
        return Draft(tuple(claims), evidence_sufficient=bool(claims))

    def _focused(self, block: EvidenceBlock) -> list[DraftClaim]:
        parts = segments(block.chunk.text)
        focus = _folded_words(block.focus) - self.stopwords
        named = [s for s in parts if focus and focus <= s.words()] or parts[:1]
        return [DraftClaim(s.text, (block.number,)) for s in named]

    def _most_relevant(self, request: GenerationRequest, blocks: list[EvidenceBlock]) -> list[DraftClaim]:
        asked = _folded_words(request.question) - self.stopwords
        scored: list[tuple[int, int, int, Segment, EvidenceBlock]] = []
        for order, block in enumerate(blocks):
            for position, seg in enumerate(segments(block.chunk.text)):
                overlap = len(asked & seg.words())
                if overlap:
                    scored.append((overlap, order, position, seg, block))
        best = sorted(scored, key=lambda t: (-t[0], t[1], t[2]))[: request.max_claims]
        best.sort(key=lambda t: (t[1], t[2]))  # shown in evidence order
        return [DraftClaim(seg.text, (block.number,)) for _, _, _, seg, block in best]
