"""Follow-ups: the earlier turn supplies the drug or the section a question leaves out (fictional)."""

from __future__ import annotations

from rag_server.answer.followup import resolve
from rag_server.answer.memory import Recalled, TurnFacts
from rag_server.domain import DecisionKind, Reason
from rag_server.persistence.conversations import Turn
from rag_server.understanding.frame import QueryFrame, TurnType, Understanding
from rag_server.vocabulary.rules import load_rules

EARLIER = Recalled(("zentorin",), "chong_chi_dinh")


def test_a_section_without_a_drug_keeps_the_drug() -> None:
    frame = QueryFrame(TurnType.CLARIFY, query="còn liều cho trẻ em thì sao?",
                       section_key="lieu_luong_va_cach_dung", missing_fields=["drug_id"])
    got = resolve(Understanding(frame, Reason.MISSING_REQUIRED_FIELD), EARLIER, load_rules())
    assert not got.reason and got.frame.drug_ids == ["zentorin"]
    assert got.frame.turn_type == TurnType.SECTION_QUESTION


def test_a_new_drug_with_a_follow_up_word_keeps_the_section() -> None:
    frame = QueryFrame(TurnType.FREE_FORM, query="còn calvimex thì sao", drug_ids=["calvimex"])
    got = resolve(Understanding(frame), EARLIER, load_rules())
    assert got.frame.drug_ids == ["calvimex"] and got.frame.section_key == "chong_chi_dinh"


def test_nothing_is_carried_without_an_earlier_drug_or_a_cue() -> None:
    frame = QueryFrame(TurnType.FREE_FORM, query="zentorin có gây buồn ngủ không", drug_ids=["zentorin"])
    assert resolve(Understanding(frame), EARLIER, load_rules()).frame.section_key == ""
    lonely = QueryFrame(TurnType.CLARIFY, query="liều?", section_key="lieu_luong_va_cach_dung",
                        missing_fields=["drug_id"])
    assert resolve(Understanding(lonely, Reason.MISSING_REQUIRED_FIELD), Recalled(), load_rules()).reason


def test_recalled_counts_the_clarifications_at_the_end_only() -> None:
    def said(kind: DecisionKind, drugs: tuple[str, ...] = ()) -> Turn:
        return Turn("assistant", "", frame=TurnFacts(drugs, "", "", int(kind), 0).to_dict())

    turns = [said(DecisionKind.CLARIFY), said(DecisionKind.ANSWERABLE, ("zentorin",)),
             said(DecisionKind.CLARIFY), said(DecisionKind.CLARIFY)]
    recalled = Recalled.of(turns)
    assert recalled.clarifies == 2 and recalled.drug_ids == ("zentorin",)
