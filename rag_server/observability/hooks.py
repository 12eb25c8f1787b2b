"""What the servicers tell observability about the call they are serving, at the cost of one contextvar set.

* `note_decision(decision)`: the Decision of a Retrieve / LookupIndication / AssessPatient reply or of an
  AskFinal. The per-server metrics Observer (metrics.py) reads it when the call ends, in the same task (the
  plumbing's `finished` runs there), and counts it by method, kind and reason.
* `note_question(*texts)`: the question text of the call (query, indication, patient facts), so the log
  filter (logs.py) can keep it out of every log line of the call unless RAG_LOG_QUESTIONS allows it. The
  worker pool and background tasks started by the call copy the context, so they see it too.

Nothing here knows which server runs the call: the per-server parts read these values in the call's own
context. Neither function ever raises.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Protocol

# (DecisionKind value, DecisionReason value) of the call's reply.
decision_var: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "rag_decision", default=None
)
# The question text(s) of the call, for the log filter.
question_var: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("rag_question", default=())


class _Decision(Protocol):
    @property
    def kind(self) -> Any: ...

    @property
    def reason(self) -> Any: ...


def note_decision(decision: _Decision) -> None:
    """The call's reply carries `decision` (a rag.v1.Decision)."""
    with contextlib.suppress(Exception):  # a malformed object must never fail the call
        decision_var.set((int(decision.kind), int(decision.reason)))


def note_question(*texts: str) -> None:
    """The call's question text(s); empty ones are ignored."""
    kept = tuple(t for t in texts if t and t.strip())
    if kept:
        question_var.set(question_var.get() + kept)


def patient_texts(patient: Any) -> tuple[str, ...]:
    """The free text of a rag.v1.PatientContext (medications, conditions, allergies)."""
    return (*patient.current_medications, *patient.conditions, *patient.allergies)


def current_questions() -> tuple[str, ...]:
    return question_var.get()


_LABELS: dict[tuple[int, int], tuple[str, str]] = {}


def decision_labels(kind: int, reason: int) -> tuple[str, str]:
    """("ABSTAIN", "OUT_OF_SCOPE"): the enum names without their prefix (an unknown value: its number).
    The names come from the contract's enums in protobuf's descriptor pool (registered by the servicers'
    generated code), not from an import of that code: observability stays below the api."""
    labels = _LABELS.get((kind, reason))
    if labels is None:
        from rag_server.domain import DecisionKind, Reason  # the domain enums mirror rag.v1's, name for name

        def name(enum: type[DecisionKind] | type[Reason], value: int) -> str:
            try:
                return enum(value).name
            except ValueError:
                return str(value)

        labels = (name(DecisionKind, kind), name(Reason, reason))
        _LABELS[(kind, reason)] = labels
    return labels
