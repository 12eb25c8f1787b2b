"""Scoring of evaluation outcomes: pure functions, no I/O.

* section questions: hit@1 = the top evidence is the gold (drug_id, section_key) and the decision
  lets it be shown (ANSWERABLE or VERIFY_PDF, or EMERGENCY: its overdose section is shown with the call-115
  message); overall, per section key and per style tag.
* indication questions: recall@k of gold_drug_ids among the first k candidates (mean over questions).
* nonsense indications: rejection rate (no candidate at all).
* abstain questions: the decision is not ANSWERABLE and its kind or reason is one of expect_decision
  (or the call was refused with INVALID_ARGUMENT and that is expected).
* false answers: abstain questions answered anyway (ANSWERABLE / VERIFY_PDF) and nonsense indications
  answered with drugs, over both kinds: the share of nonsense that reached a clinician as an answer.
* patient questions: the gold facet's status, and a gold term in its evidence when given.
* corpus questions: answered, with a gold term in the top evidence text.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_server.evaluation.dataset import Question
from rag_server.text.normalize import fold

USABLE_KINDS = frozenset({"ANSWERABLE", "VERIFY_PDF"})
EMERGENCY = "EMERGENCY"  # a decision reason: its evidence (the overdose section) is shown with it
INDICATION_K = 8


@dataclass(frozen=True)
class Outcome:
    """What the system returned for one question (names without enum prefixes)."""

    question: Question
    got_drug_id: str = ""
    got_section_key: str = ""
    got_drug_ids: tuple[str, ...] = ()
    decision_kind: str = ""
    decision_reason: str = ""
    route: str = ""
    error: str = ""
    error_code: str = ""  # gRPC status name when the call failed
    millis: float = 0.0
    facet_status: str = ""  # patient questions: status of the gold facet of the first drug
    evidence_texts: tuple[str, ...] = ()  # patient: the gold facet's evidence; corpus: the top evidence

    @property
    def got_label(self) -> str:
        if self.error:
            return f"error: {self.error}"
        q = self.question
        if q.kind in ("indication", "nonsense_indication"):
            return ", ".join(self.got_drug_ids) or "(no drug)"
        if q.kind == "patient":
            return f"{q.gold_facet}: {self.facet_status or '(no facet)'}"
        top = f"{self.got_drug_id}/{self.got_section_key}" if self.got_drug_id else "(no evidence)"
        decision = "/".join(p for p in (self.decision_kind, self.decision_reason) if p)
        return f"{top} [{decision}]" if decision else top

    @property
    def gold_label(self) -> str:
        q = self.question
        if q.kind == "section":
            return f"{q.gold_drug_id}/{q.gold_section_key}"
        if q.kind == "indication":
            return ", ".join(q.gold_drug_ids)
        if q.kind == "nonsense_indication":
            return "(no drug)"
        if q.kind == "patient":
            terms = f" with {' | '.join(q.gold_terms)}" if q.gold_terms else ""
            return f"{q.gold_facet}: {q.expect_status}{terms}"
        if q.kind == "corpus":
            return "answer with " + " | ".join(q.gold_terms)
        return " | ".join(q.expect_decision)


@dataclass
class Rate:
    correct: int = 0
    total: int = 0

    @property
    def value(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def add(self, ok: bool) -> None:
        self.total += 1
        self.correct += int(ok)

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "total": self.total, "value": round(self.value, 4)}


def section_hit(outcome: Outcome) -> bool:
    """The top evidence is the gold section and the caller may show it: an ANSWERABLE or VERIFY_PDF decision,
    or an EMERGENCY whose evidence is the gold section (the overdose section shown with the call-115 message
    to "tre nuot nham ca nua vi X thi bi gi, xu tri sao")."""
    q = outcome.question
    shown = outcome.decision_kind in USABLE_KINDS or outcome.decision_reason == EMERGENCY
    return (
        not outcome.error
        and shown
        and outcome.got_drug_id == q.gold_drug_id
        and outcome.got_section_key == q.gold_section_key
    )


def recall_at_k(got: Sequence[str], gold: Iterable[str], k: int = INDICATION_K) -> float:
    """Share of gold ids among the first k of `got` (1.0 when there is no gold)."""
    gold_set = set(gold)
    if not gold_set:
        return 1.0
    return len(gold_set & set(got[:k])) / len(gold_set)


def indication_recall(outcome: Outcome, k: int = INDICATION_K) -> float:
    if outcome.error:
        return 0.0
    return recall_at_k(outcome.got_drug_ids, outcome.question.gold_drug_ids, k)


def nonsense_rejected(outcome: Outcome) -> bool:
    return not outcome.error and not outcome.got_drug_ids


def abstention_correct(outcome: Outcome) -> bool:
    expected = set(outcome.question.expect_decision)
    if outcome.error:
        return bool(outcome.error_code) and outcome.error_code in expected
    if outcome.decision_kind in USABLE_KINDS:
        return False
    return bool(expected & {outcome.decision_kind, outcome.decision_reason})


def false_answer(outcome: Outcome) -> bool:
    """A question that must not be answered was answered (an abstain question with a usable decision, a
    nonsense indication with drugs)."""
    if outcome.error:
        return False
    if outcome.question.kind == "nonsense_indication":
        return bool(outcome.got_drug_ids)
    return outcome.question.kind == "abstain" and outcome.decision_kind in USABLE_KINDS


def _has_term(texts: Iterable[str], terms: Iterable[str]) -> bool:
    folded = [fold(t) for t in texts]
    return any(fold(term) in text for term in terms for text in folded)


def patient_correct(outcome: Outcome) -> bool:
    q = outcome.question
    if outcome.error or outcome.facet_status != q.expect_status:
        return False
    return not q.gold_terms or _has_term(outcome.evidence_texts, q.gold_terms)


def corpus_correct(outcome: Outcome) -> bool:
    if outcome.error or outcome.decision_kind not in USABLE_KINDS:
        return False
    return _has_term(outcome.evidence_texts[:1], outcome.question.gold_terms)


def is_correct(outcome: Outcome, k: int = INDICATION_K) -> bool:
    kind = outcome.question.kind
    if kind == "section":
        return section_hit(outcome)
    if kind == "indication":
        return indication_recall(outcome, k) == 1.0
    if kind == "nonsense_indication":
        return nonsense_rejected(outcome)
    if kind == "patient":
        return patient_correct(outcome)
    if kind == "corpus":
        return corpus_correct(outcome)
    return abstention_correct(outcome)


@dataclass
class EvalReport:
    section_hit1: Rate = field(default_factory=Rate)
    per_section: dict[str, Rate] = field(default_factory=dict)
    per_style: dict[str, Rate] = field(default_factory=dict)
    indication_recall: float = 0.0
    indication_full: Rate = field(default_factory=Rate)
    nonsense_rejection: Rate = field(default_factory=Rate)
    abstention: Rate = field(default_factory=Rate)
    false_answers: Rate = field(default_factory=Rate)  # correct = answered although it must not be
    patient: Rate = field(default_factory=Rate)
    corpus: Rate = field(default_factory=Rate)
    errors: int = 0
    k: int = INDICATION_K
    misses: list[Outcome] = field(default_factory=list)
    p50_ms: float = 0.0
    p99_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "section_hit_at_1": self.section_hit1.to_dict(),
            "per_section": {k: v.to_dict() for k, v in sorted(self.per_section.items())},
            "per_style": {k: v.to_dict() for k, v in sorted(self.per_style.items())},
            f"indication_recall_at_{self.k}": round(self.indication_recall, 4),
            "indication_all_gold_found": self.indication_full.to_dict(),
            "nonsense_rejection": self.nonsense_rejection.to_dict(),
            "abstention_accuracy": self.abstention.to_dict(),
            "false_answer_rate": self.false_answers.to_dict(),
            "patient_accuracy": self.patient.to_dict(),
            "corpus_accuracy": self.corpus.to_dict(),
            "errors": self.errors,
            "latency_ms": {"p50": round(self.p50_ms, 2), "p99": round(self.p99_ms, 2)},
            "misses": [
                {"id": o.question.id, "kind": o.question.kind, "query": o.question.query,
                 "got": o.got_label, "gold": o.gold_label}
                for o in self.misses
            ],
        }


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (0 for an empty sequence)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(pct / 100 * len(ordered))))
    return ordered[rank - 1]


def summarize(outcomes: Iterable[Outcome], k: int = INDICATION_K) -> EvalReport:
    report = EvalReport(k=k)
    per_section: dict[str, Rate] = defaultdict(Rate)
    per_style: dict[str, Rate] = defaultdict(Rate)
    recalls: list[float] = []
    millis: list[float] = []
    for outcome in outcomes:
        q = outcome.question
        expected_error = bool(outcome.error_code) and outcome.error_code in q.expect_decision
        report.errors += int(bool(outcome.error) and not expected_error)
        if outcome.millis > 0:
            millis.append(outcome.millis)
        ok = is_correct(outcome, k)
        for style in q.style:
            per_style[style].add(ok)
        if q.kind in ("abstain", "nonsense_indication"):
            report.false_answers.add(false_answer(outcome))
        if q.kind == "section":
            report.section_hit1.add(ok)
            per_section[q.gold_section_key].add(ok)
        elif q.kind == "patient":
            report.patient.add(ok)
        elif q.kind == "corpus":
            report.corpus.add(ok)
        elif q.kind == "indication":
            recalls.append(indication_recall(outcome, k))
            report.indication_full.add(ok)
        elif q.kind == "nonsense_indication":
            report.nonsense_rejection.add(ok)
        else:
            report.abstention.add(ok)
        if not ok:
            report.misses.append(outcome)
    report.per_section = dict(per_section)
    report.per_style = dict(per_style)
    report.indication_recall = sum(recalls) / len(recalls) if recalls else 0.0
    report.p50_ms = percentile(millis, 50)
    report.p99_ms = percentile(millis, 99)
    return report
