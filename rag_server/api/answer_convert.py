"""Ask events (answer/model.py) to rag.v1 messages."""

from __future__ import annotations

from rag_server.answer.model import AskEvent, Block, Citation, Claim, Final, Progress
from rag_server.api import convert
from rag_server.gen.rag.v1 import answer_pb2
from rag_server.gen.rag.v1 import common_pb2 as pb


def claim(c: Claim) -> pb.Claim:
    return pb.Claim(
        text=c.text,
        source_ids=list(c.source_ids),
        support=[convert.claim_support(s.chunk_id, s.start, s.end, s.physical_page, s.boxes)
                 for s in c.support],
    )


def block(b: Block) -> pb.AnswerBlock:
    return pb.AnswerBlock(
        title=b.title,
        claims=[claim(c) for c in b.claims],
        section_key=b.section_key,
        drug_id=b.drug_id,
        requires_visual_check=b.requires_visual_check,
        pages=[convert.source_ref(r) for r in b.pages],
        note=b.note,
        table=convert.table_view(b.table) if b.table is not None else None,
    )


def citation(c: Citation) -> pb.Citation:
    return pb.Citation(
        chunk_id=c.chunk_id,
        drug_id=c.drug_id,
        drug_name=c.drug_name,
        section_key=c.section_key,
        section_title=c.section_title,
        source=convert.source_ref(c.pages[0]) if c.pages else None,
        pages=[convert.source_ref(r) for r in c.pages],
    )


def final(f: Final, correlation_id: str) -> answer_pb2.AskFinal:
    assessed = f.assessment.candidates if f.assessment is not None else []
    return answer_pb2.AskFinal(
        decision=convert.decision(f.decision),
        citations=[citation(c) for c in f.citations],
        answer_text=f.answer_text,
        trace_id=f.trace_id,
        correlation_id=correlation_id,
        timings=[pb.StageTiming(stage=s, millis=round(ms, 3)) for s, ms in f.timings],
        frame=convert.frame(f.frame) if f.frame is not None else None,
        route=convert.route(f.route),
        quick_replies=f.quick_replies,
        candidates=[convert.indication_candidate(c) for c in f.candidates],
        assessments=[convert.candidate_assessment(c) for c in assessed],
        disclaimer=f.disclaimer,
        conversation_id=f.conversation_id,
    )


def event(e: AskEvent, correlation_id: str) -> answer_pb2.AskResponse:
    if isinstance(e, Progress):
        return answer_pb2.AskResponse(progress=answer_pb2.AskProgress(stage=e.stage.value, message=e.message))
    if isinstance(e, Block):
        return answer_pb2.AskResponse(block=block(e))
    return answer_pb2.AskResponse(final=final(e, correlation_id))
