"""Every DecisionReason has its own message and a kind: an unmapped reason must never fall through; the
domain enums mirror the proto enums exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_server.domain import DecisionKind, Reason, SourceRef
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.reasons import REASON_MESSAGES, kind_for, make_decision

REASONS = [v for v in pb.DecisionReason.values() if v != pb.DECISION_REASON_UNSPECIFIED]
KINDS = {pb.DecisionKind.Name(v).removeprefix("DECISION_KIND_"): v for v in pb.DecisionKind.values()}
COMMON_PROTO = Path(__file__).resolve().parents[2] / "protos" / "rag" / "v1" / "common.proto"


def _kind_named_in_proto() -> dict[int, int]:
    """The kind each reason's proto comment names (`// ABSTAIN: ...`), when it names one."""
    text = COMMON_PROTO.read_text(encoding="utf-8")
    body = text.split("enum DecisionReason", 1)[1].split("}", 1)[0]
    found: dict[int, int] = {}
    for comment, name in re.findall(r"//\s*([A-Z_]+):[^\n]*\n\s*(DECISION_REASON_[A-Z_]+)\s*=", body):
        if comment in KINDS:
            found[pb.DecisionReason.Value(name)] = KINDS[comment]
    return found


def test_enum_is_not_empty() -> None:
    assert len(REASONS) >= 25


def test_domain_enums_mirror_the_proto_enums() -> None:
    assert {r.name: r.value for r in Reason} == {
        pb.DecisionReason.Name(v).removeprefix("DECISION_REASON_"): v for v in pb.DecisionReason.values()
    }
    assert {k.name: k.value for k in DecisionKind} == {
        pb.DecisionKind.Name(v).removeprefix("DECISION_KIND_"): v for v in pb.DecisionKind.values()
    }


@pytest.mark.parametrize("reason", REASONS, ids=pb.DecisionReason.Name)
def test_every_reason_has_a_message_and_a_kind(reason: int) -> None:
    message = REASON_MESSAGES.get(Reason(reason))
    assert message, f"{pb.DecisionReason.Name(reason)} has no message"
    assert message.strip() == message and len(message) > 10
    assert kind_for(Reason(reason)) in KINDS.values()
    assert kind_for(Reason(reason)) != pb.DECISION_KIND_UNSPECIFIED


def test_messages_are_distinct_and_unspecified_is_unmapped() -> None:
    assert pb.DECISION_REASON_UNSPECIFIED not in REASON_MESSAGES
    assert set(REASON_MESSAGES) == set(REASONS)
    messages = list(REASON_MESSAGES.values())
    assert len(set(messages)) == len(messages), (
        "two reasons share one message (one would misdescribe the other)"
    )


def test_kind_matches_the_proto_comment() -> None:
    named = _kind_named_in_proto()
    assert len(named) >= 20, "could not read the kinds from common.proto comments"
    wrong = {
        pb.DecisionReason.Name(r): pb.DecisionKind.Name(kind_for(Reason(r)))
        for r, k in named.items()
        if kind_for(Reason(r)) != k
    }
    assert not wrong


def test_only_grounded_evidence_or_a_book_read_whole_is_answerable() -> None:
    answerable = [r for r in REASONS if kind_for(Reason(r)) == DecisionKind.ANSWERABLE]
    assert answerable == [Reason.GROUNDED_EVIDENCE_AVAILABLE, Reason.EFFECT_NOT_LISTED]
    assert kind_for(Reason.INSUFFICIENT_EVIDENCE) == DecisionKind.ABSTAIN


def test_make_decision_fills_kind_message_pages_and_detail() -> None:
    page = SourceRef(document_id="abc", physical_page=3, printed_page=101)
    decision = make_decision(Reason.VISUAL_VERIFICATION_REQUIRED, pages=[page], detail="bảng 1")
    assert decision.kind == DecisionKind.VERIFY_PDF and decision.usable
    assert decision.reason == Reason.VISUAL_VERIFICATION_REQUIRED
    assert decision.message == f"{REASON_MESSAGES[Reason.VISUAL_VERIFICATION_REQUIRED]} (bảng 1)"
    assert decision.pages == (page,)
    plain = make_decision(Reason.DRUG_NOT_FOUND)
    assert plain.message == REASON_MESSAGES[Reason.DRUG_NOT_FOUND]
    assert plain.kind == DecisionKind.ABSTAIN and not plain.usable


def test_unknown_reason_is_refused_not_defaulted() -> None:
    with pytest.raises(KeyError):
        make_decision(Reason.UNSPECIFIED)
