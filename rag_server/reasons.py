"""Decisions and the one table mapping every reason to a Vietnamese message (vocabulary/strings.toml).

An unmapped reason must never fall through to a generic "no data" message (that would misdescribe
an outage), so tests walk the DecisionReason enum against REASON_MESSAGES.
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_server.domain import Decision, DecisionKind, Reason, SourceRef
from rag_server.vocabulary.strings import load_strings


def _messages() -> dict[Reason, str]:
    strings = load_strings()
    return {reason: strings.reasons[reason.name] for reason in Reason if reason.name in strings.reasons}


REASON_MESSAGES: dict[Reason, str] = _messages()  # strings.toml [reasons]

_KIND_OF: dict[Reason, DecisionKind] = {
    Reason.GROUNDED_EVIDENCE_AVAILABLE: DecisionKind.ANSWERABLE,
    Reason.VISUAL_VERIFICATION_REQUIRED: DecisionKind.VERIFY_PDF,
    Reason.MISSING_REQUIRED_FIELD: DecisionKind.CLARIFY,
    Reason.AMBIGUOUS_DRUG: DecisionKind.CLARIFY,
    Reason.EFFECT_NOT_LISTED: DecisionKind.ANSWERABLE,
}


def kind_for(reason: Reason) -> DecisionKind:
    """The decision kind a reason implies (everything not listed abstains)."""
    return _KIND_OF.get(reason, DecisionKind.ABSTAIN)


def make_decision(reason: Reason, pages: Iterable[SourceRef] = (), detail: str = "") -> Decision:
    message = REASON_MESSAGES[reason]
    if detail:
        message = f"{message} ({detail})"
    return Decision(kind_for(reason), reason, message, tuple(pages))
