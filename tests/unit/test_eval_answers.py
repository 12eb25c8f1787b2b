"""The answer measures of `rag-server eval --answers`, on outcomes made by hand (fictional texts)."""

from __future__ import annotations

from rag_server.evaluation.answers import (
    AnswerOutcome,
    ClaimSeen,
    decision_right,
    numbers_grounded,
    spans_verbatim,
    summarize_answers,
    whole_section,
)
from rag_server.evaluation.dataset import Question

SECTION = Question("q1", "section", "liều của zentorin", gold_drug_id="zentorin",
                   gold_section_key="lieu_luong_va_cach_dung")
TEXT = "Người lớn: uống 2 viên 50 mg mỗi ngày."


def _answered(claim: str, spans: tuple[tuple[str, int, int], ...] = (("c0", 0, 10),)) -> AnswerOutcome:
    return AnswerOutcome(
        SECTION, "ANSWERABLE", "GROUNDED_EVIDENCE_AVAILABLE",
        claims=[ClaimSeen(claim, ("c0",), spans)],
        cited=[("c0", "zentorin", "lieu_luong_va_cach_dung")],
        chunk_texts={"c0": TEXT, "c1": "Trẻ em: không dùng."}, section_parts=("c0", "c1"),
    )


def test_a_number_not_in_the_cited_chunk_is_caught() -> None:
    assert numbers_grounded(_answered(TEXT))
    assert not numbers_grounded(_answered("Người lớn: uống 3 viên 50 mg mỗi ngày."))


def test_spans_must_lie_inside_the_chunk() -> None:
    assert spans_verbatim(_answered(TEXT))
    assert not spans_verbatim(_answered(TEXT, (("c0", 30, 400),)))


def test_a_section_answer_citing_one_part_of_two_is_not_whole() -> None:
    outcome = _answered(TEXT)
    assert not whole_section(outcome)
    outcome.cited.append(("c1", "zentorin", "lieu_luong_va_cach_dung"))
    assert whole_section(outcome)


def test_abstain_questions_and_their_reasons() -> None:
    q = Question("q2", "abstain", "giá vàng", expect_decision=("ABSTAIN", "OUT_OF_SCOPE"))
    right = AnswerOutcome(q, "ABSTAIN", "OUT_OF_SCOPE")
    wrong = AnswerOutcome(q, "ABSTAIN", "DRUG_NOT_FOUND")
    answered = AnswerOutcome(q, "ANSWERABLE", "GROUNDED_EVIDENCE_AVAILABLE")
    assert decision_right(right) and decision_right(wrong) and not decision_right(answered)
    report = summarize_answers([right, wrong, answered])
    assert (report.abstain_reason.correct, report.abstain_reason.total) == (1, 3)
    assert (report.decision.correct, report.decision.total) == (2, 3)
