"""AskPipeline: Flow B of seed 003 as one async generator of events.

safety pre-filter -> memory -> understanding (+ guards) -> route + retrieval + decide -> generation ->
grounding -> entailment (one repair) -> verified blocks -> final. Every failed gate ends in its own reason;
nothing is streamed before the whole answer passed grounding and entailment, so a client never shows a
block the final decision then withdraws. Blocking work (store, providers) runs through `run` (the
servicer's worker pool, with the call's budget).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rag_server.answer import safety
from rag_server.answer.budget import BudgetExhausted, RequestBudget
from rag_server.answer.entail import Judge, locate
from rag_server.answer.evidence import Gathered, gather, urgent
from rag_server.answer.generate import Generator
from rag_server.answer.grounding import verify
from rag_server.answer.memory import ANONYMOUS_OWNER, Memory, Recalled, TurnFacts
from rag_server.answer.model import (
    AskEvent,
    Block,
    Citation,
    Claim,
    Draft,
    EvidenceBlock,
    Final,
    GenerationRequest,
    Progress,
    Stage,
)
from rag_server.answer.understand import Understander, guarded
from rag_server.domain import Decision, DecisionKind, Reason
from rag_server.persistence.conversations import Turn
from rag_server.providers.base import MalformedOutput, ProviderError
from rag_server.reasons import make_decision
from rag_server.retrieval.results import Route
from rag_server.understanding.frame import QueryFrame, TurnType, Understanding
from rag_server.vocabulary.language import Language

Run = Callable[..., Awaitable[Any]]
DISCLAIMER = ("Thông tin trích từ Dược thư Quốc gia Việt Nam, chỉ để tham khảo chuyên môn; không thay thế "
              "chẩn đoán và chỉ định của bác sĩ.")


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


_ANSWER_FAILURES = (Reason.PROVIDER_UNAVAILABLE, Reason.MALFORMED_OUTPUT)  # of a generator or judge call


def _grounded(draft: Draft, gathered: Gathered) -> None:
    """Stop unless every claim of the draft is grounded in its cited evidence (grounding.py)."""
    failure = verify(draft, gathered.evidence)
    if failure is not None:
        raise _Stop(failure.reason, failure.detail)


@dataclass
class AskPipeline:
    retriever: Any  # rag_server.retrieval.retriever.Retriever (Any: the pipeline only calls it through `run`)
    language: Language
    understander: Understander
    generator: Generator
    judge: Judge
    memory: Memory
    config: AnswerConfig
    run: Run

    async def ask(
        self, question: str, conversation_id: str = "", client_remaining: float | None = None,
        owner: str = ANONYMOUS_OWNER,
    ) -> AsyncIterator[AskEvent]:
        """`owner`: the caller, who must own `conversation_id` (claimed when new; ConversationNotOwned
        otherwise, raised before anything of it is read)."""
        started = time.perf_counter()
        timings: list[tuple[str, float]] = []
        final = Final(_placeholder(), conversation_id=conversation_id, trace_id=uuid.uuid4().hex,
                      disclaimer=DISCLAIMER)
        budget = RequestBudget.start(self.config.max_provider_calls, self.config.timeout_s, client_remaining)
        history: list[Turn] = []
        try:
            async for event in self._flow(question, conversation_id, budget, timings, final, history, owner):
                yield event
        finally:
            timings.append(("total", (time.perf_counter() - started) * 1000))
            final.timings = timings
        yield final
        if conversation_id:
            await self._remember(conversation_id, question, final, owner)

    # ------------------------------------------------------------------------------------------ flow
    async def _flow(
        self, question: str, conversation_id: str, budget: RequestBudget, timings: list[tuple[str, float]],
        final: Final, history: list[Turn], owner: str,
    ) -> AsyncIterator[AskEvent]:
        mark = time.perf_counter()

        def stage(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            timings.append((name, (now - mark) * 1000))
            mark = now

        checked = safety.check(question, self.language.safety)
        stage("safety")
        if checked.signal is safety.Signal.HARM:
            final.decision = make_decision(Reason.HARMFUL_REQUEST)
            return
        if not self.retriever.loaded():
            final.decision = make_decision(Reason.CORPUS_NOT_LOADED)
            return
        if conversation_id:
            history += await self.memory.recent(conversation_id, self.config.memory_turns, owner)
            stage("memory")
        recalled = Recalled.of(history)
        if checked.signal.emergency:
            async for event in self._emergency(question, recalled, final):
                yield event
            stage("emergency")
            return
        try:
            understanding = await self._understand(question, recalled, budget)
        except _Stop as stop:
            final.decision = make_decision(stop.reason, detail=stop.detail)
            return
        frame = understanding.frame
        final.frame = frame
        stage("understand")
        yield Progress(Stage.UNDERSTOOD, _understood(frame))
        if understanding.reason:
            final.decision = make_decision(understanding.reason, detail=understanding.detail)
            final.quick_replies = self._quick_replies(frame, understanding)
            return
        gathered: Gathered = await self.run(gather, self.retriever, frame)
        final.route, final.candidates = gathered.route, gathered.candidates
        final.assessment = gathered.assessment
        stage("retrieve")
        yield Progress(Stage.EVIDENCE_RETRIEVED, f"{len(gathered.evidence)} đoạn bằng chứng")
        if not gathered.decision.usable:
            final.decision = gathered.decision
            for notice in gathered.notices:  # e.g. each patient fact with nothing found, said plainly
                yield notice
            final.answer_text = _text(gathered.notices)
            return
        yield Progress(Stage.GENERATING, self.generator.name)
        try:
            blocks = await self._answer(question, gathered, budget, stage)
        except _Stop as stop:
            final.decision = make_decision(stop.reason, detail=stop.detail)
            return
        yield Progress(Stage.VERIFYING, "đã kiểm tra trích dẫn, số liệu và mức độ hỗ trợ")
        for block in blocks:
            yield block
        final.decision = gathered.decision
        final.citations = _citations(blocks, gathered.evidence)
        final.answer_text = _text(blocks)
        final.quick_replies = self._quick_replies(frame, understanding)

    async def _understand(self, question: str, recalled: Recalled, budget: RequestBudget) -> Understanding:
        proposed = await self._call(
            budget, f"understand:{self.understander.name}",
            (Reason.UNDERSTANDING_PROVIDER_UNAVAILABLE, Reason.UNDERSTANDING_MALFORMED_OUTPUT),
            self.understander.understand, question, recalled, self.retriever,
        )
        return guarded(proposed, recalled, self.language)

    async def _answer(
        self, question: str, gathered: Gathered, budget: RequestBudget, stage: Callable[[str], None]
    ) -> list[Block]:
        """Generate, ground, judge (one repair), then the verified blocks in evidence order."""
        usable = [b for b in gathered.evidence if not b.chunk.requires_visual_check]
        if not usable:  # everything must be read on the page: the notices are the answer
            return list(gathered.notices)
        request = GenerationRequest(question, gathered.plan, gathered.evidence, self.config.max_claims)
        draft = await self._generate(request, budget)
        stage("generate")
        _grounded(draft, gathered)
        judgement = await self._judge(draft, gathered, question, budget)
        if not judgement.complete:
            repair = GenerationRequest(question, gathered.plan, gathered.evidence, self.config.max_claims,
                                       missing=judgement.missing)
            draft = await self._generate(repair, budget)
            _grounded(draft, gathered)
            judgement = await self._judge(draft, gathered, question, budget)
            if not judgement.complete:
                raise _Stop(Reason.INCOMPLETE_ANSWER)
        stage("verify")
        return _blocks(draft, gathered.evidence) + gathered.notices

    async def _generate(self, request: GenerationRequest, budget: RequestBudget) -> Draft:
        for _ in range(2):  # "insufficient" twice -> evidence_insufficient
            draft: Draft = await self._call(
                budget, f"generate:{self.generator.name}", _ANSWER_FAILURES, self.generator.generate, request
            )
            if draft.evidence_sufficient and draft.claims:
                return draft
        raise _Stop(Reason.EVIDENCE_INSUFFICIENT)

    async def _judge(self, draft: Draft, gathered: Gathered, question: str, budget: RequestBudget) -> Any:
        judgement = await self._call(
            budget, f"judge:{self.judge.name}", _ANSWER_FAILURES,
            self.judge.judge, draft, gathered.evidence, gathered.plan, question,
        )
        if judgement.unsupported:
            raise _Stop(Reason.UNSUPPORTED_CLAIM, draft.claims[judgement.unsupported[0]].text[:80])
        return judgement

    async def _call(
        self,
        budget: RequestBudget,
        label: str,
        failures: tuple[Reason, Reason],
        fn: Callable[..., Any],
        *args: Any,
    ) -> Any:
        """One provider call: counted against the budget, bounded by what is left of it, its failures ended
        with their reasons (`failures`: provider unavailable, malformed output)."""
        unavailable, malformed = failures
        try:
            budget.spend(label)
            return await self._provider(budget, fn, *args)
        except BudgetExhausted as exc:
            raise _Stop(Reason.REQUEST_BUDGET_EXHAUSTED, str(exc)) from exc
        except ProviderError as exc:
            raise _Stop(unavailable) from exc
        except MalformedOutput as exc:
            raise _Stop(malformed) from exc

    async def _provider(self, budget: RequestBudget, fn: Callable[..., Any], *args: Any) -> Any:
        """A provider call bounded by what is left of the request budget: one that does not answer in time
        ends the Ask (request_budget_exhausted) instead of holding it; its worker finishes on its own."""
        try:
            return await asyncio.wait_for(self.run(fn, *args), timeout=budget.remaining())
        except TimeoutError as exc:
            raise BudgetExhausted("a provider did not answer within the request budget") from exc

    async def _emergency(self, question: str, recalled: Recalled, final: Final) -> AsyncIterator[AskEvent]:
        """Seek urgent care now; the overdose section of a named drug, verified, as evidence."""
        final.decision = make_decision(Reason.EMERGENCY)
        understanding: Understanding = await self.run(self.retriever.understand, question)
        drug_ids = understanding.frame.drug_ids or list(recalled.drug_ids)
        final.frame = understanding.frame
        gathered = await self.run(urgent, self.retriever, drug_ids) if drug_ids else None
        if gathered is None:
            return
        draft = await self.run(self._extract, gathered)
        if verify(draft, gathered.evidence) is not None:
            return  # never show unverified text, even here: the urgent message stands alone
        blocks = _blocks(draft, gathered.evidence) + gathered.notices
        for block in blocks:
            yield block
        final.route = Route.SECTION
        final.citations = _citations(blocks, gathered.evidence)
        final.answer_text = _text(blocks)

    def _extract(self, gathered: Gathered) -> Draft:
        from rag_server.answer.generate import OfflineGenerator  # extractive: the section as it stands

        return OfflineGenerator().generate(GenerationRequest("", gathered.plan, gathered.evidence, 0))

    # ------------------------------------------------------------------------------------ helpers
    def _quick_replies(self, frame: QueryFrame, understanding: Understanding) -> list[str]:
        catalog = self.retriever.catalog
        if understanding.reason == Reason.AMBIGUOUS_DRUG and catalog is not None:
            return [catalog.display_name(d) for d in frame.drug_ids][:8]
        if not frame.drug_ids or catalog is None or understanding.reason:
            return []
        name = catalog.display_name(frame.drug_ids[0])
        vocabulary = self.language.vocabulary
        suggest = ("chong_chi_dinh", "lieu_luong_va_cach_dung", "tuong_tac_thuoc", "tac_dung_khong_mong_muon")
        return [f"{vocabulary.title(k)} của {name}" for k in suggest if k != frame.section_key][:3]

    async def _remember(self, conversation_id: str, question: str, final: Final, owner: str) -> None:
        frame = final.frame
        facts = TurnFacts(
            tuple(frame.drug_ids) if frame else (), frame.section_key if frame else "",
            frame.turn_type.value if frame else "", int(final.decision.kind), int(final.decision.reason),
        )
        await self.memory.append(conversation_id, [
            Turn("user", question),
            Turn("assistant", final.answer_text or final.decision.message, frame=facts.to_dict()),
        ], owner)


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
    return " · ".join(parts)


def _blocks(draft: Draft, evidence: Sequence[EvidenceBlock]) -> list[Block]:
    """Verified claims grouped by their first cited block's title, in the order the titles first appear."""
    grouped: dict[str, list[Claim]] = {}
    first: dict[str, EvidenceBlock] = {}
    for claim in draft.claims:
        home = evidence[claim.sources[0] - 1]
        cited = [evidence[s - 1].chunk for s in claim.sources]
        grouped.setdefault(home.title, []).append(Claim(
            claim.text, tuple(c.chunk_id for c in cited), tuple(locate(claim.text, c) for c in cited)
        ))
        first.setdefault(home.title, home)
    return [Block(title, tuple(claims), first[title].chunk.section_key, first[title].chunk.drug_id)
            for title, claims in grouped.items()]


def _citations(blocks: Sequence[Block], evidence: Sequence[EvidenceBlock]) -> list[Citation]:
    by_id = {b.chunk.chunk_id: b.chunk for b in evidence}
    cited = dict.fromkeys(cid for block in blocks for claim in block.claims for cid in claim.source_ids)
    out: list[Citation] = []
    for cid in cited:
        chunk = by_id[cid]
        out.append(Citation(cid, chunk.drug_id, chunk.drug_name, chunk.section_key, chunk.section_title,
                            tuple(chunk.source_refs)))
    return out


def _text(blocks: Sequence[Block]) -> str:
    parts: list[str] = []
    for block in blocks:
        lines = [f"{block.title}:"] + [f"- {c.text}" for c in block.claims]
        if block.note:
            lines.append(block.note)
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
