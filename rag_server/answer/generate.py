"""Generation decides only how evidence is presented (seed 002). The offline generator (default) is
extractive and deterministic: each claim is one sentence or list item of the evidence block it cites,
copied verbatim, and it shows a sentence only when it carries what was asked, as words, never because one
syllable is shared (text.carry: "đau đầu" is carried by "nhức đầu", not by "liều khởi đầu").

* WHOLE_SECTION / OVERVIEW / URGENT: every segment of every prose block, in the order given (part order),
  never truncated (the text of a table or 2-D formula inside a prose block, its visual spans, excepted);
* MOST_RELEVANT: the segments that carry an asked term (the more distinct terms the better), at most
  `max_claims`, shown in evidence order; none carrying one is "evidence insufficient";
* EFFECT: every segment of the effect sections that names the effect asked about (or a synonym);
* INDICATION_LIST: per block, the segments carrying the condition (its name and synonyms); a block with
  none is left out;
* PATIENT_FACETS: per block, the segments holding what each patient fact matched there (AssessPatient's
  matches: the anchor or medicine name found); a whole-section facet (pregnancy, breastfeeding) whole.
There is no first-sentence fallback: a fact with no sentence is said plainly by the pipeline instead.

Blocks that need a visual check are never paraphrased: no claim is made from them (the pipeline shows
them as table blocks or VERIFY_PDF notices with their pages). LLM generators (llm_generate.py) return the
same `Draft`; `relevant` then drops any of their claims that carries nothing asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rag_server.answer.model import Draft, DraftClaim, EvidenceBlock, GenerationRequest, Plan
from rag_server.answer.segments import Segment, segments
from rag_server.domain import ChunkKind, in_visual_span
from rag_server.text.carry import carries
from rag_server.text.carry import spans as carried_spans
from rag_server.text.match import find_any, phrase, phrases, tokenize

_WHOLE = frozenset({Plan.WHOLE_SECTION, Plan.OVERVIEW, Plan.URGENT})
FOCUSED = frozenset({Plan.MOST_RELEVANT, Plan.EFFECT, Plan.INDICATION_LIST, Plan.PATIENT_FACETS})


class Generator(Protocol):
    name: str
    blocking: bool  # calls a network provider: it is scheduled on the worker pool, never inline

    def generate(self, request: GenerationRequest) -> Draft:
        """Raises ProviderError on a provider failure, MalformedOutput on output it cannot read."""


def usable(block: EvidenceBlock) -> bool:
    return block.chunk.chunk_kind is ChunkKind.PROSE and not block.chunk.requires_visual_check


def shown_segments(block: EvidenceBlock) -> list[Segment]:
    """The segments of a block's text outside its visual spans (a formula's text is read on the page)."""
    return [s for s in segments(block.chunk.text) if not in_visual_span(block.chunk, s.start, s.end)]


def carrying(seg: Segment, block: EvidenceBlock, forms: Sequence[str]) -> int:
    """How many distinct forms the segment carries as whole words (its words read in its chunk)."""
    if not forms:
        return 0
    found = carried_spans(block.chunk.text, forms)
    inside = [(a, b) for a, b in found if seg.start <= a and b <= seg.end]
    return len({block.chunk.text[a:b].lower() for a, b in inside})


class OfflineGenerator:
    name = "offline"
    blocking = False

    def generate(self, request: GenerationRequest) -> Draft:
        blocks = [b for b in request.evidence if usable(b)]
        if request.plan in _WHOLE:  # a patient fact's block beside a whole section: what the fact matched
            claims = [c for b in blocks for c in (_facts(b) if b.facts else _whole(b))]
        elif request.plan is Plan.MOST_RELEVANT:
            claims = self._most_relevant(request, blocks)
        elif request.plan is Plan.EFFECT:
            forms = request.asked_forms()
            claims = [DraftClaim(s.text, (b.number,)) for b in blocks for s in shown_segments(b)
                      if carrying(s, b, forms)]
        elif request.plan is Plan.INDICATION_LIST:
            claims = [DraftClaim(s.text, (b.number,)) for b in blocks for s in shown_segments(b)
                      if carrying(s, b, b.focus_forms)]
        else:
            claims = [c for b in blocks for c in _facts(b)]
        return Draft(tuple(claims), evidence_sufficient=bool(claims))

    def _most_relevant(self, request: GenerationRequest, blocks: list[EvidenceBlock]) -> list[DraftClaim]:
        forms, known = request.asked_forms(), request.known_forms()
        scored: list[tuple[int, int, int, int, Segment, EvidenceBlock]] = []
        for order, block in enumerate(blocks):
            for position, seg in enumerate(shown_segments(block)):
                count = carrying(seg, block, forms)
                if count:
                    scored.append((carrying(seg, block, known), count, order, position, seg, block))
        if any(t[0] for t in scored):  # a sentence about what is medically asked: only such sentences
            scored = [t for t in scored if t[0]]
        best = sorted(scored, key=lambda t: (-t[0], -t[1], t[2], t[3]))[: request.max_claims]
        best.sort(key=lambda t: (t[2], t[3]))  # shown in evidence order
        return [DraftClaim(seg.text, (block.number,)) for _, _, _, _, seg, block in best]


def _whole(block: EvidenceBlock) -> list[DraftClaim]:
    return [DraftClaim(s.text, (block.number,)) for s in shown_segments(block)]


def _facts(block: EvidenceBlock) -> list[DraftClaim]:
    """The segments holding what the block's patient facts matched; the whole block when it was asked
    whole (a pregnancy or breastfeeding facet has no matches)."""
    parts = shown_segments(block)
    if not block.facts:
        return [DraftClaim(s.text, (block.number,)) for s in parts]
    found = phrases(phrase(m.matched) for m in block.facts if m.matched)
    # the words AssessPatient's matcher found in this chunk, matched the way it matched them (syllables on
    # word-boundaries of the text, not a segmentation that may glue "sử hen" together)
    return [DraftClaim(s.text, (block.number,)) for s in parts if find_any(tokenize(s.text), found)]


def relevant(draft: Draft, request: GenerationRequest) -> Draft:
    """The draft without the claims of a focused plan that carry nothing asked (an LLM's unrelated lines)."""
    if request.plan not in FOCUSED:
        return draft
    by_number = {b.number: b for b in request.evidence}
    kept = []
    for claim in draft.claims:
        cited = [by_number[n] for n in claim.sources if n in by_number]
        forms = _forms_for(request, cited)
        if not forms or _holds(claim.text, forms, request.plan):
            kept.append(claim)
    return Draft(tuple(kept), draft.evidence_sufficient and bool(kept))


def _holds(text: str, forms: Sequence[str], plan: Plan) -> bool:
    """Whether a claim carries one of `forms`: the words a patient fact matched are found the way
    AssessPatient's matcher found them (syllables on word boundaries); asked terms as segmented words."""
    if plan is Plan.PATIENT_FACETS:
        return bool(find_any(tokenize(text), phrases(phrase(f) for f in forms)))
    return carries(text, forms)


def _forms_for(request: GenerationRequest, cited: Sequence[EvidenceBlock]) -> tuple[str, ...]:
    if request.plan is Plan.INDICATION_LIST:
        return tuple(f for b in cited for f in b.focus_forms)
    if request.plan is Plan.PATIENT_FACETS:
        if any(not b.facts for b in cited):
            return ()  # a whole-section facet: every sentence of it is about the fact
        return tuple(m.matched for b in cited for m in b.facts if m.matched)
    return request.asked_forms()

