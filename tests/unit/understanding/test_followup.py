"""Follow-ups: the earlier turn supplies the drug or the section a question leaves out, inside the one
reading (fictional catalog); the frame says what it carried."""

from __future__ import annotations

import pytest
from fictional_formulary import build_chunks

from rag_server.answer.memory import TurnFacts, prior_of
from rag_server.domain import DecisionKind, Reason
from rag_server.persistence.conversations import Turn
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.frame import Prior, SituationKind, TurnType
from rag_server.understanding.reading import read
from rag_server.vocabulary.language import load_language

EARLIER = Prior(("zentorin",), "chong_chi_dinh")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(build_chunks(), load_language())


def test_a_section_without_a_drug_keeps_the_drug(catalog: Catalog) -> None:
    got = read("còn liều cho trẻ em thì sao?", catalog, load_language(), EARLIER)
    assert not got.reason and got.frame.drug_ids == ("zentorin",)
    assert got.frame.turn_type == TurnType.SECTION_QUESTION
    assert got.frame.carried.drug_ids == ("zentorin",) and not got.frame.carried.section_key


def test_a_new_drug_with_a_follow_up_word_keeps_the_section(catalog: Catalog) -> None:
    got = read("còn calvimex thì sao", catalog, load_language(), EARLIER)
    assert got.frame.drug_ids == ("calvimex",) and got.frame.section_key == "chong_chi_dinh"
    assert got.frame.carried.section_key == "chong_chi_dinh"


def test_nothing_is_carried_without_an_earlier_drug_or_a_cue(catalog: Catalog) -> None:
    got = read("zentorin có gây buồn ngủ không", catalog, load_language(), EARLIER)
    assert got.frame.section_key == "" and not got.frame.carried
    assert read("liều?", catalog, load_language(), Prior()).reason == Reason.MISSING_REQUIRED_FIELD


def test_an_emergency_follow_up_keeps_the_drug_it_refers_to(catalog: Catalog) -> None:
    got = read("con tôi vừa uống 10 viên thuốc này", catalog, load_language(), EARLIER)
    assert got.frame.situation.kind is SituationKind.INGESTION
    assert got.frame.drug_ids == ("zentorin",)


def test_the_fourth_clarification_in_a_row_abstains(catalog: Catalog) -> None:
    tired = Prior(clarifies=3)
    assert read("liều?", catalog, load_language(), tired).reason == Reason.CLARIFY_LOOP_EXHAUSTED


def test_prior_counts_the_clarifications_at_the_end_only() -> None:
    def said(kind: DecisionKind, drugs: tuple[str, ...] = ()) -> Turn:
        return Turn("assistant", "", frame=TurnFacts(drugs, "", "", int(kind), 0).to_dict())

    turns = [said(DecisionKind.CLARIFY), said(DecisionKind.ANSWERABLE, ("zentorin",)),
             said(DecisionKind.CLARIFY), said(DecisionKind.CLARIFY)]
    prior = prior_of(turns)
    assert prior.clarifies == 2 and prior.drug_ids == ("zentorin",)


def test_a_word_the_book_does_not_know_is_no_drug_unless_presented_as_one(catalog: Catalog) -> None:
    # "cabin" is a word of the question, not a drug the formulary lacks: the conversation's drug is kept
    question = "trưa cabin nóng hầm hập, có nên để hộp thuốc trên xe không?"
    got = read(question, catalog, load_language(), EARLIER)
    assert not got.reason and got.frame.drug_ids == ("zentorin",)
    assert got.frame.section_key == "do_on_dinh_va_bao_quan"
    # a name presented as a medicine is one: the book does not have it
    named = read("còn liều của semaglutid thì sao", catalog, load_language(), Prior())
    assert named.reason == Reason.DRUG_NOT_FOUND


def test_a_duration_is_no_part_of_a_medicine_name(catalog: Catalog) -> None:
    got = read("bác sĩ cho clarithromycin 7 ngày, uống zentorin cùng có sao không", catalog, load_language())
    assert got.frame.patient.current_medications == ("clarithromycin",)
