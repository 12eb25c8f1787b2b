"""AskPipeline: Flow B of seed 003 as one async generator of events.

memory -> the one reading (understanding: the situation first) -> harm refused / emergency answered ->
route + retrieval + decide (answer/evidence.py) -> generation -> relevance -> grounding -> entailment (one
repair) -> verified blocks -> final. Every failed gate ends in its own reason; nothing is streamed before the
whole answer passed grounding and entailment, so a client never shows a block the final decision then
withdraws. Where work runs is decided where it is scheduled (`Schedule`, api/work.py): store work and
blocking providers on the worker pool with the call's budget, cheap work on the event loop.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from rag_server.answer.budget import BudgetExhausted, RequestBudget
from rag_server.answer.entail import Judge, Judgement, locate
from rag_server.answer.evidence import Gathered, gather, urgent, visual_notices
from rag_server.answer.generate import Generator, OfflineGenerator, relevant, usable
from rag_server.answer.grounding import verify
from rag_server.answer.memory import Memory, TurnFacts, prior_of
from rag_server.answer.model import (
    AskEvent,
    Block,
    Citation,
    Claim,
    Draft,
    EvidenceBlock,
    Final,
    GenerationRequest,
    Plan,
    Progress,
    Stage,
)
from rag_server.domain import ChunkKind, Decision, DecisionKind, Reason, boxes_for, table_view
from rag_server.persistence.conversations import ANONYMOUS_OWNER, Turn
from rag_server.providers.base import MalformedOutput, ProviderError
from rag_server.reasons import make_decision
from rag_server.retrieval.corpus import Corpus, Providers
from rag_server.retrieval.results import Route
from rag_server.understanding.frame import Prior, QueryFrame, Reading, SituationKind, TurnType
from rag_server.understanding.understander import Understander
from rag_server.vocabulary.language import Language

T = TypeVar("T")


class Schedule(Protocol):
    """Runs `fn(*args)`: on the worker pool when `blocking`, else on the event loop unless it reaches the
    store or a provider (then again on the pool): api/work.py."""

    def __call__(self, fn: Callable[..., T], *args: Any, blocking: bool = False) -> Awaitable[T]: ...


@dataclass(frozen=True)
class AnswerConfig:
    max_claims: int = 8  # a free-form answer's most relevant sentences
    max_provider_calls: int = 8
    timeout_s: float = 30.0
    memory_turns: int = 12


class _Stop(Exception):  # ends the pipeline with a decision
    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(reason.name)
        self.reason = reason
        self.detail = detail


_UNDERSTAND_FAILURES = (Reason.UNDERSTANDING_PROVIDER_UNAVAILABLE, Reason.UNDERSTANDING_MALFORMED_OUTPUT)
_ANSWER_FAILURES = (Reason.PROVIDER_UNAVAILABLE, Reason.MALFORMED_OUTPUT)  # of a generator or judge call


async def understand(
    question: str, prior: Prior, corpus: Corpus, understander: Understander, schedule: Schedule
) -> Reading:
    """The one reading Understand and Ask both act on (a provider's failures raise)."""
    return await schedule(
        understander.understand,
        question,
        prior,
        corpus.catalog,
        corpus.language,
        blocking=understander.blocking,
    )


@dataclass
class AskPipeline:
    corpus: Corpus
    providers: Providers
    understander: Understander
    generator: Generator
    judge: Judge
    memory: Memory
    config: AnswerConfig
    schedule: Schedule

    @property
    def language(self) -> Language:
        return self.corpus.language

    async def ask(
        self,
        question: str,
        conversation_id: str = "",
        client_remaining: float | None = None,
        owner: str = ANONYMOUS_OWNER,
    ) -> AsyncIterator[AskEvent]:
        started = time.perf_counter()
        timings: list[tuple[str, float]] = []
        final = Final(
            _placeholder(),
            conversation_id=conversation_id,
            trace_id=uuid.uuid4().hex,
            disclaimer=self.language.strings.disclaimer,
        )
        budget = RequestBudget.start(self.config.max_provider_calls, self.config.timeout_s, client_remaining)
        try:
            async for event in self._flow(question, conversation_id, owner, budget, timings, final):
                yield event
        finally:
            timings.append(("total", (time.perf_counter() - started) * 1000))
            final.timings = timings
        yield final
        if conversation_id:
            await self._remember(conversation_id, question, final, owner)

    # ------------------------------------------------------------------------------------------ flow
    async def _flow(
        self,
        question: str,
        conversation_id: str,
        owner: str,
        budget: RequestBudget,
        timings: list[tuple[str, float]],
        final: Final,
    ) -> AsyncIterator[AskEvent]:
        mark = time.perf_counter()

        def stage(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            timings.append((name, (now - mark) * 1000))
            mark = now

        history: list[Turn] = []
        if conversation_id:
            history = await self.memory.recent(conversation_id, self.config.memory_turns, owner)
            stage("memory")
        try:
            reading = await self._call(
                budget,
                f"understand:{self.understander.name}",
                _UNDERSTAND_FAILURES,
                understand,
                question,
                prior_of(history),
                self.corpus,
                self.understander,
                self.schedule,
            )
        except _Stop as stop:
            final.decision = make_decision(stop.reason, detail=stop.detail)
            return
        frame = reading.frame
        final.frame = frame
        stage("understand")
        situation = frame.situation
        if situation.kind is SituationKind.HARM:
            final.decision = make_decision(Reason.HARMFUL_REQUEST)
            return
        if situation.emergency:
            async for event in self._emergency(frame, final):
                yield event
            stage("emergency")
            return
        if not self.corpus.loaded:
            final.decision = make_decision(Reason.CORPUS_NOT_LOADED)
            return
        yield Progress(Stage.UNDERSTOOD, _understood(frame))
        if reading.reason:
            final.decision = make_decision(reading.reason, detail=reading.detail)
            final.quick_replies = self._quick_replies(reading)
            return
        gathered: Gathered = await self.schedule(gather, reading, self.corpus, self.providers)
        final.route, final.candidates = gathered.route, gathered.candidates
        final.assessment = gathered.assessment
        stage("retrieve")
        yield Progress(
            Stage.EVIDENCE_RETRIEVED,
            self.language.strings.notice("evidence_found", count=len(gathered.evidence)),
        )
        decision = gathered.decision
        if not decision.usable or decision.reason is Reason.EFFECT_NOT_LISTED:
            shown = [*gathered.lead, *gathered.notices]
            for notice in shown:  # each patient fact with nothing found, an effect not listed: said plainly
                yield notice
            final.decision = decision
            final.answer_text = _text(shown)
            final.quick_replies = self._quick_replies(reading) if decision.usable else []
            return
        yield Progress(Stage.GENERATING, self.generator.name)
        try:
            blocks = await self._answer(question, frame, gathered, budget, stage)
        except _Stop as stop:
            final.decision = make_decision(stop.reason, detail=stop.detail)
            return
        yield Progress(Stage.VERIFYING, self.language.strings.notices["verified"])
        shown = [*gathered.lead, *blocks, *_tables(gathered.evidence, self.language), *gathered.notices]
        for block in shown:
            yield block
        final.decision = _with_visual(decision, gathered.evidence)
        final.citations = _citations(blocks, gathered.evidence)
        final.answer_text = _text(shown)
        final.quick_replies = self._quick_replies(reading)

    async def _answer(
        self,
        question: str,
        frame: QueryFrame,
        gathered: Gathered,
        budget: RequestBudget,
        stage: Callable[[str], None],
    ) -> list[Block]:
        """Generate, keep what was asked, ground, judge (one repair), then the verified blocks."""
        if not [b for b in gathered.evidence if usable(b)]:  # everything must be read on the page
            return []
        request = GenerationRequest(
            question, gathered.plan, gathered.evidence, self.config.max_claims, frame=frame
        )
        draft = await self._generate(request, budget)
        stage("generate")
        _grounded(draft, gathered)
        judgement = await self._judge(draft, gathered, question, budget)
        if not judgement.complete:
            repair = replace(request, missing=judgement.missing)
            draft = await self._generate(repair, budget)
            _grounded(draft, gathered)
            judgement = await self._judge(draft, gathered, question, budget)
            if not judgement.complete:
                raise _Stop(Reason.INCOMPLETE_ANSWER)
        stage("verify")
        return _blocks(draft, gathered.evidence)

    async def _generate(self, request: GenerationRequest, budget: RequestBudget) -> Draft:
        for _ in range(2):  # "insufficient" twice -> evidence_insufficient
            draft: Draft = await self._call(
                budget,
                f"generate:{self.generator.name}",
                _ANSWER_FAILURES,
                self.schedule,
                self.generator.generate,
                request,
                blocking=self.generator.blocking,
            )
            draft = relevant(draft, request)  # an unrelated line is dropped, never shown
            if draft.evidence_sufficient and draft.claims:
                return draft
        raise _Stop(Reason.EVIDENCE_INSUFFICIENT)

    async def _judge(
        self, draft: Draft, gathered: Gathered, question: str, budget: RequestBudget
    ) -> Judgement:
        judgement: Judgement = await self._call(
            budget,
            f"judge:{self.judge.name}",
            _ANSWER_FAILURES,
            self.schedule,
            self.judge.judge,
            draft,
            gathered.evidence,
            gathered.plan,
            question,
            blocking=self.judge.blocking,
        )
        if judgement.unsupported:
            raise _Stop(Reason.UNSUPPORTED_CLAIM, draft.claims[judgement.unsupported[0]].text[:80])
        return judgement

    async def _call(
        self,
        budget: RequestBudget,
        label: str,
        failures: tuple[Reason, Reason],
        fn: Callable[..., Awaitable[T]],
        *args: Any,
        **kwargs: Any,
    ) -> T:
        """One provider call: counted against the budget, bounded by what is left of it, its failures ended
        with their reasons (`failures`: provider unavailable, malformed output)."""
        unavailable, malformed = failures
        try:
            budget.spend(label)
            return await asyncio.wait_for(fn(*args, **kwargs), timeout=budget.remaining())
        except TimeoutError as exc:
            raise _Stop(
                Reason.REQUEST_BUDGET_EXHAUSTED, "a provider did not answer within the budget"
            ) from exc
        except BudgetExhausted as exc:
            raise _Stop(Reason.REQUEST_BUDGET_EXHAUSTED, str(exc)) from exc
        except ProviderError as exc:
            raise _Stop(unavailable) from exc
        except MalformedOutput as exc:
            raise _Stop(malformed) from exc

    async def _emergency(self, frame: QueryFrame, final: Final) -> AsyncIterator[AskEvent]:
        """Seek urgent care now (the decision says which parts of the situation were seen); the overdose
        section of a named drug, verified, as evidence."""
        final.decision = make_decision(Reason.EMERGENCY, detail=frame.situation.describe())
        found = (
            await self.schedule(urgent, frame, self.corpus) if frame.drug_ids and self.corpus.loaded else None
        )
        if found is None:
            return
        _, evidence = found
        request = GenerationRequest("", Plan.URGENT, evidence, 0, frame=frame)
        draft = OfflineGenerator().generate(request)  # extractive: the section as it stands
        if verify(draft, evidence) is not None:
            return  # never show unverified text, even here: the urgent message stands alone
        blocks = _blocks(draft, evidence) + visual_notices(evidence, self.language)
        for block in blocks:
            yield block
        final.route = Route.SECTION
        final.citations = _citations(blocks, evidence)
        final.answer_text = _text(blocks)

    # ------------------------------------------------------------------------------------ helpers
    def _quick_replies(self, reading: Reading) -> list[str]:
        frame = reading.frame
        catalog = self.corpus.catalog
        if reading.reason == Reason.AMBIGUOUS_DRUG and catalog is not None:
            return [catalog.display_name(d) for d in frame.drug_ids][:8]
        if not frame.drug_ids or catalog is None or reading.reason:
            return []
        name = catalog.display_name(frame.drug_ids[0])
        vocabulary, strings = self.language.vocabulary, self.language.strings
        return [
            strings.notice("quick_reply", section=vocabulary.title(k), drug=name)
            for k in vocabulary.roles.suggested
            if k != frame.section_key
        ][:3]

    async def _remember(self, conversation_id: str, question: str, final: Final, owner: str) -> None:
        frame = final.frame
        facts = TurnFacts(
            tuple(frame.drug_ids) if frame else (),
            frame.section_key if frame else "",
            frame.turn_type.value if frame else "",
            int(final.decision.kind),
            int(final.decision.reason),
        )
        await self.memory.append(
            conversation_id,
            [
                Turn("user", question),
                Turn("assistant", final.answer_text or final.decision.message, frame=facts.to_dict()),
            ],
            owner,
        )


def _grounded(draft: Draft, gathered: Gathered) -> None:
    """Stop unless every claim of the draft is grounded in its cited evidence (grounding.py)."""
    failure = verify(draft, gathered.evidence)
    if failure is not None:
        raise _Stop(failure.reason, failure.detail)


def _placeholder() -> Decision:
    return Decision(DecisionKind.UNSPECIFIED, Reason.UNSPECIFIED, "")


def _understood(frame: QueryFrame) -> str:
    parts = [frame.turn_type.value]
    if frame.drug_ids:
        parts.append(", ".join(frame.drug_ids))
    if frame.section_key:
        parts.append(frame.section_key)
    if frame.turn_type == TurnType.INDICATION_LOOKUP:
        parts.append(frame.indication)
    if frame.effect is not None:
        parts.append(frame.effect.display)
    return " · ".join(parts)


def _blocks(draft: Draft, evidence: Sequence[EvidenceBlock]) -> list[Block]:
    """Verified claims grouped by their first cited block's title, in the order the titles first appear;
    each claim's support with its span and where it is printed."""
    grouped: dict[str, list[Claim]] = {}
    first: dict[str, EvidenceBlock] = {}
    for claim in draft.claims:
        home = evidence[claim.sources[0] - 1]
        cited = [evidence[s - 1].chunk for s in claim.sources]
        supports = []
        for chunk in cited:
            found = locate(claim.text, chunk)
            boxes = tuple(boxes_for(chunk, found.start, found.end))
            supports.append(replace(found, boxes=boxes, physical_page=boxes[0].physical_page if boxes else 0))
        grouped.setdefault(home.title, []).append(
            Claim(claim.text, tuple(c.chunk_id for c in cited), tuple(supports))
        )
        first.setdefault(home.title, home)
    return [
        Block(title, tuple(claims), first[title].chunk.section_key, first[title].chunk.drug_id)
        for title, claims in grouped.items()
    ]


def _tables(evidence: Sequence[EvidenceBlock], language: Language) -> list[Block]:
    """Each table of the evidence as its own block: the cells as rows, the image of the printed table and
    its pages, flagged for the visual check (only this block needs it)."""
    out: list[Block] = []
    for b in evidence:
        view = table_view(b.chunk) if b.chunk.chunk_kind is ChunkKind.BLOCK else None
        if view is None:
            continue
        from rag_server.answer.evidence import pages_text

        note = language.strings.notice("table", pages=pages_text(b.chunk.source_refs))
        out.append(
            Block(
                b.title,
                section_key=b.chunk.section_key,
                drug_id=b.chunk.drug_id,
                requires_visual_check=True,
                pages=tuple(b.chunk.source_refs),
                note=note,
                table=view,
            )
        )
    return out


def _with_visual(decision: Decision, evidence: Sequence[EvidenceBlock]) -> Decision:
    """The decision naming the chunks that must be checked on the page (the rest is verified prose)."""
    visual = tuple(b.chunk.chunk_id for b in evidence if b.chunk.requires_visual_check)
    return replace(decision, visual_check_chunk_ids=visual) if visual else decision


def _citations(blocks: Sequence[Block], evidence: Sequence[EvidenceBlock]) -> list[Citation]:
    by_id = {b.chunk.chunk_id: b.chunk for b in evidence}
    cited = dict.fromkeys(cid for block in blocks for claim in block.claims for cid in claim.source_ids)
    out: list[Citation] = []
    for cid in cited:
        chunk = by_id[cid]
        out.append(
            Citation(
                cid,
                chunk.drug_id,
                chunk.drug_name,
                chunk.section_key,
                chunk.section_title,
                tuple(chunk.source_refs),
            )
        )
    return out


def _text(blocks: Sequence[Block]) -> str:
    parts: list[str] = []
    for block in blocks:
        lines = [f"{block.title}:"] + [f"- {c.text}" for c in block.claims]
        if block.table is not None:
            lines += [" | ".join(row) for row in block.table.rows]
        if block.note:
            lines.append(block.note)
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
