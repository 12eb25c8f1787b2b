"""A held-out style question set over the FICTIONAL sample formulary, asked over gRPC of a real
`rag-server serve` (the shared server of tests/conftest.py, which ingests the sample on start).

Runs anywhere (no real corpus needed). The questions (eval/heldout_sample_questions.jsonl) were written
without looking at the service's phrase lists, so this is the closest thing to the checker's held-out
questions that CI can run. Floors are what was measured minus a small margin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from rag_server.evaluation.dataset import load_questions
from rag_server.evaluation.metrics import summarize
from rag_server.evaluation.report import print_report
from rag_server.evaluation.runner import run_eval
from rag_server.vocabulary import load_vocabulary

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "eval" / "heldout_sample_questions.jsonl"
SAMPLE_DRUGS = {
    "acid-pelmironic",
    "keptralon",
    "lumiprazol",
    "mirvetan",
    "novadiamin",
    "orbifexin",
    "travoxan",
    "zelvorin",
}


def test_heldout_file_is_over_the_sample_drugs() -> None:
    questions = load_questions(HELDOUT, load_vocabulary().keys)
    assert len(questions) >= 40
    gold = {q.gold_drug_id for q in questions if q.kind == "section"}
    gold |= {d for q in questions if q.kind == "indication" for d in q.gold_drug_ids}
    assert gold == SAMPLE_DRUGS
    assert {q.kind for q in questions} == {"section", "indication", "nonsense_indication", "abstain"}


async def test_heldout_questions_on_the_sample_formulary(shared_server: object) -> None:
    target = shared_server.target  # type: ignore[attr-defined]
    questions = load_questions(HELDOUT, load_vocabulary().keys)
    report = summarize(await run_eval(target, questions, concurrency=4))
    print_report(Console(width=140), report, misses=20)
    misses = [
        f"{o.question.id} {o.question.query!r}: got {o.got_label}, gold {o.gold_label}" for o in report.misses
    ]
    assert report.errors == 0, misses
    assert report.section_hit1.value >= 0.9, misses
    assert report.indication_recall >= 0.9, misses
    assert report.nonsense_rejection.value == 1.0, misses
    assert report.abstention.value >= 0.8, misses


async def test_heldout_answers_through_ask(shared_server: object) -> None:
    """The same questions through AnswerService/Ask, each answer checked from the outside."""
    from rag_server.evaluation.answers import run_answers, summarize_answers
    from rag_server.evaluation.report import answers_table

    target = shared_server.target  # type: ignore[attr-defined]
    questions = load_questions(HELDOUT, load_vocabulary().keys)
    report = summarize_answers(await run_answers(target, questions, concurrency=4))
    Console(width=140).print(answers_table(report))
    assert report.errors == 0, report.misses
    assert report.decision.value >= 0.9, report.misses
    assert report.citations.value >= 0.9, report.misses
    # never relaxed: a number or a span not in the cited chunk, or a cut section, is a wrong answer
    assert report.numbers.value == 1.0 and report.spans.value == 1.0, report.misses
    assert report.whole_section.total > 0 and report.whole_section.value == 1.0, report.misses
