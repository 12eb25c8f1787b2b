"""Scoring of evaluation outcomes (pure functions)."""

from __future__ import annotations

import pytest

from rag_server.evaluation.dataset import Question
from rag_server.evaluation.metrics import (
    Outcome,
    abstention_correct,
    indication_recall,
    nonsense_rejected,
    percentile,
    recall_at_k,
    section_hit,
    summarize,
)


def sec(qid: str, drug: str, key: str, *styles: str) -> Question:
    return Question(id=qid, kind="section", query="q", gold_drug_id=drug, gold_section_key=key, style=styles)


def test_section_hit_needs_drug_section_and_a_usable_decision() -> None:
    q = sec("s1", "zorvatin", "chong_chi_dinh")
    assert section_hit(Outcome(q, "zorvatin", "chong_chi_dinh", decision_kind="ANSWERABLE"))
    assert section_hit(Outcome(q, "zorvatin", "chong_chi_dinh", decision_kind="VERIFY_PDF"))
    assert not section_hit(Outcome(q, "zorvatin", "chi_dinh", decision_kind="ANSWERABLE"))
    assert not section_hit(Outcome(q, "melocrin", "chong_chi_dinh", decision_kind="ANSWERABLE"))
    # the right evidence attached to an abstention is not an answer
    assert not section_hit(Outcome(q, "zorvatin", "chong_chi_dinh", decision_kind="ABSTAIN"))
    assert not section_hit(Outcome(q, error="UNAVAILABLE: down"))
    # an emergency shows the overdose section with its call-115 message: that section is shown
    overdose = sec("s2", "zorvatin", "qua_lieu_va_xu_tri")
    emergency = {"decision_kind": "ABSTAIN", "decision_reason": "EMERGENCY"}
    assert section_hit(Outcome(overdose, "zorvatin", "qua_lieu_va_xu_tri", **emergency))
    assert not section_hit(Outcome(q, "zorvatin", "qua_lieu_va_xu_tri", **emergency))  # not the section asked


def test_recall_at_k_counts_only_the_first_k() -> None:
    got = ["a", "b", "c", "d"]
    assert recall_at_k(got, ["a", "d"], k=8) == 1.0
    assert recall_at_k(got, ["a", "d"], k=3) == 0.5
    assert recall_at_k(got, ["x"], k=8) == 0.0
    assert recall_at_k([], [], k=8) == 1.0


def test_indication_and_nonsense_scoring() -> None:
    ind = Question(id="i1", kind="indication", query="q", gold_drug_ids=("a", "b"))
    assert indication_recall(Outcome(ind, got_drug_ids=("b", "z"))) == 0.5
    assert indication_recall(Outcome(ind, got_drug_ids=("a", "b"), error="DEADLINE_EXCEEDED: slow")) == 0.0
    non = Question(id="n1", kind="nonsense_indication", query="q")
    assert nonsense_rejected(Outcome(non))
    assert not nonsense_rejected(Outcome(non, got_drug_ids=("a",)))
    assert not nonsense_rejected(Outcome(non, error="INTERNAL: boom"))


def test_abstention_matches_kind_or_reason_and_never_an_answer() -> None:
    q = Question(id="a1", kind="abstain", query="q", expect_decision=("DRUG_NOT_FOUND",))
    assert abstention_correct(Outcome(q, decision_kind="ABSTAIN", decision_reason="DRUG_NOT_FOUND"))
    assert not abstention_correct(Outcome(q, decision_kind="ABSTAIN", decision_reason="OUT_OF_SCOPE"))
    assert not abstention_correct(Outcome(q, decision_kind="ANSWERABLE", decision_reason="DRUG_NOT_FOUND"))
    clarify = Question(id="a2", kind="abstain", query="q", expect_decision=("CLARIFY",))
    assert abstention_correct(
        Outcome(clarify, decision_kind="CLARIFY", decision_reason="MISSING_REQUIRED_FIELD")
    )
    assert not abstention_correct(Outcome(clarify, error="INVALID_ARGUMENT: bad"))


def test_summarize_breaks_down_per_section_and_style_and_lists_misses() -> None:
    outcomes = [
        Outcome(
            sec("s1", "a", "chong_chi_dinh", "brand"),
            "a",
            "chong_chi_dinh",
            decision_kind="ANSWERABLE",
            millis=10,
        ),
        Outcome(
            sec("s2", "a", "chong_chi_dinh", "no_diacritics"),
            "a",
            "chi_dinh",
            decision_kind="ANSWERABLE",
            millis=20,
        ),
        Outcome(
            sec("s3", "b", "than_trong", "brand"), "b", "than_trong", decision_kind="ANSWERABLE", millis=30
        ),
        Outcome(
            Question(id="i1", kind="indication", query="q", gold_drug_ids=("a", "b")), got_drug_ids=("a",)
        ),
        Outcome(Question(id="n1", kind="nonsense_indication", query="q")),
        Outcome(
            Question(id="x1", kind="abstain", query="q", expect_decision=("OUT_OF_SCOPE",)),
            decision_kind="ABSTAIN",
            decision_reason="OUT_OF_SCOPE",
        ),
    ]
    report = summarize(outcomes)
    assert (report.section_hit1.correct, report.section_hit1.total) == (2, 3)
    assert report.per_section["chong_chi_dinh"].value == 0.5
    assert report.per_section["than_trong"].value == 1.0
    assert report.per_style["brand"].value == 1.0
    assert report.per_style["no_diacritics"].value == 0.0
    assert report.indication_recall == 0.5
    assert report.indication_full.value == 0.0
    assert report.nonsense_rejection.value == 1.0
    assert report.abstention.value == 1.0
    assert [o.question.id for o in report.misses] == ["s2", "i1"]
    assert report.p50_ms == 20
    data = report.to_dict()
    assert data["section_hit_at_1"] == {"correct": 2, "total": 3, "value": 0.6667}
    assert data["misses"][0]["gold"] == "a/chong_chi_dinh"
    assert data["misses"][0]["got"].startswith("a/chi_dinh")


@pytest.mark.parametrize(
    ("values", "pct", "expected"),
    [
        ([], 50, 0.0),
        ([5.0], 99, 5.0),
        ([1, 2, 3, 4], 50, 2),
        ([float(i) for i in range(1, 101)], 99, 99.0),
    ],
)
def test_percentile_nearest_rank(values: list[float], pct: float, expected: float) -> None:
    assert percentile(values, pct) == expected
