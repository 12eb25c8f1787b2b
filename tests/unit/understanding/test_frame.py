"""Deterministic understanding: section phrases (longest wins, never a guess), turn types, indication
phrasings, patient facts and guards, on a fictional catalog."""

from __future__ import annotations

import pytest
from fictional_formulary import build_chunks

from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.frame import Reading as Understanding
from rag_server.understanding.frame import TurnType
from rag_server.understanding.reading import read as build_frame
from rag_server.vocabulary.language import load_language

R = pb.DecisionReason


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(build_chunks(), load_language())


def understand(catalog: Catalog, q: str) -> Understanding:
    return build_frame(q, catalog, load_language())


@pytest.mark.parametrize(
    ("question", "section"),
    [
        ("chống chỉ định của zentorin", "chong_chi_dinh"),
        ("chỉ định của zentorin", "chi_dinh"),
        ("zentorin chống chỉ định với ai", "chong_chi_dinh"),
        ("quá liều zentorin xử trí thế nào", "qua_lieu_va_xu_tri"),
        ("liều zentorin", "lieu_luong_va_cach_dung"),
        ("uống quá liều zentorin thì sao", "qua_lieu_va_xu_tri"),
        ("chong chi dinh zentorin", "chong_chi_dinh"),
        ("chi dinh zentorin", "chi_dinh"),
        ("qua lieu zentorin", "qua_lieu_va_xu_tri"),
        ("lieu dung zentorin", "lieu_luong_va_cach_dung"),
        ("zentorin có tác dụng phụ gì", "tac_dung_khong_mong_muon"),
        ("zentorin cho con bú được không", "thoi_ky_cho_con_bu"),
        ("bà bầu dùng zentorin được không", "thoi_ky_mang_thai"),
        ("bảo quản zentorin thế nào", "do_on_dinh_va_bao_quan"),
        ("zentorin tương tác với thuốc nào", "tuong_tac_thuoc"),
        ("thận trọng khi dùng zentorin", "than_trong"),
    ],
)
def test_section_questions(catalog: Catalog, question: str, section: str) -> None:
    u = understand(catalog, question)
    assert u.frame.turn_type == TurnType.SECTION_QUESTION, u
    assert (u.frame.drug_ids, u.frame.section_key) == (("zentorin",), section)


def test_a_drug_name_containing_a_section_word_does_not_select_that_section(catalog: Catalog) -> None:
    u = understand(catalog, "bảo quản linh có tác dụng phụ gì")
    assert (u.frame.drug_ids, u.frame.section_key) == (("bao-quan-linh",), "tac_dung_khong_mong_muon")
    assert understand(catalog, "bảo quản linh").frame.turn_type == TurnType.DRUG_OVERVIEW
    u = understand(catalog, "cách bảo quản bảo quản linh")
    assert u.frame.section_key == "do_on_dinh_va_bao_quan"


def test_no_section_word_is_free_form_never_a_guess(catalog: Catalog) -> None:
    u = understand(catalog, "zentorin có tốt không")
    assert u.frame.turn_type == TurnType.FREE_FORM and u.frame.section_key == ""


@pytest.mark.parametrize(
    "question", ["zentorin", "Zentorin là gì", "thông tin về thuốc zentorin", "ZENTORIX"]
)
def test_bare_drug_name_is_an_overview(catalog: Catalog, question: str) -> None:
    u = understand(catalog, question)
    assert (u.frame.turn_type, u.frame.drug_ids) == (TurnType.DRUG_OVERVIEW, ("zentorin",))


@pytest.mark.parametrize(
    ("question", "indication"),
    [
        ("thuốc nào điều trị đau lưng cầu vồng", "đau lưng cầu vồng"),
        ("đau lưng cầu vồng dùng thuốc gì?", "đau lưng cầu vồng"),
        ("chỉ định cho tăng huyết áp cầu vồng", "tăng huyết áp cầu vồng"),
        ("tôi bị mất ngủ do trăng tròn nên uống thuốc gì", "mất ngủ do trăng tròn"),
        ("thuoc nao tri viem hong sao bang", "viem hong sao bang"),
        ("Bệnh nhân bị viêm họng sao băng thì dùng thuốc nào vậy", "viêm họng sao băng"),
    ],
)
def test_indication_lookup(catalog: Catalog, question: str, indication: str) -> None:
    u = understand(catalog, question)
    assert u.frame.turn_type == TurnType.INDICATION_LOOKUP and u.frame.drug_ids == ()
    assert u.frame.indication == indication


def test_section_word_without_drug_asks_back(catalog: Catalog) -> None:
    u = understand(catalog, "chống chỉ định là gì")
    assert u.frame.turn_type == TurnType.CLARIFY and u.frame.missing_fields == ("drug_id",)
    assert u.reason == R.DECISION_REASON_MISSING_REQUIRED_FIELD


def test_ambiguous_brand_asks_back_with_candidates(catalog: Catalog) -> None:
    u = understand(catalog, "liều Duomax")
    assert u.frame.turn_type == TurnType.CLARIFY and u.reason == R.DECISION_REASON_AMBIGUOUS_DRUG
    assert u.frame.drug_ids == ("calvimex", "zentorin") and "CALVIMEX" in u.detail


@pytest.mark.parametrize("question", ["xin chào", "Chào bạn!", "cảm ơn bạn nhiều nhé", "hello"])
def test_smalltalk(catalog: Catalog, question: str) -> None:
    u = understand(catalog, question)
    assert u.frame.turn_type == TurnType.SMALLTALK and u.reason == R.DECISION_REASON_SMALLTALK


@pytest.mark.parametrize(
    "question",
    [
        "chó bị sốt uống zentorin được không",
        "thuốc thú y cho gia súc",
        "mèo nhà tôi bị nôn",
        "thu cung bi ho dung thuoc gi",
    ],
)
def test_out_of_scope(catalog: Catalog, question: str) -> None:
    u = understand(catalog, question)
    assert u.frame.turn_type == TurnType.OUT_OF_SCOPE and u.reason == R.DECISION_REASON_OUT_OF_SCOPE


@pytest.mark.parametrize(
    "question",
    ["bị chó cắn có cần tiêm thuốc gì", "cho toi hoi chong chi dinh zentorin", "liều zentorin cho người lớn"],
)
def test_not_out_of_scope(catalog: Catalog, question: str) -> None:
    assert understand(catalog, question).frame.turn_type != TurnType.OUT_OF_SCOPE


def test_patient_assessment_separates_current_medicines(catalog: Catalog) -> None:
    u = understand(
        catalog, "bệnh nhân 70 tuổi suy thận đang dùng calvimex và warfarin, có dùng zentorin được không?"
    )
    f = u.frame
    assert f.turn_type == TurnType.PATIENT_ASSESSMENT and f.drug_ids == ("zentorin",)
    assert f.patient.current_medications == ("calvimex", "warfarin")
    assert f.patient.renal_impairment and f.patient.age_years == 70
    assert "suy thận" in f.patient.conditions and "người cao tuổi" in f.patient.conditions


@pytest.mark.parametrize(
    ("question", "medication"),
    [
        ("zentorin uống cùng calvimex được không", "calvimex"),
        ("Zentorin 5mg dùng cùng warfarin được không", "warfarin"),
        ("zentorin dùng kèm warfarin có sao không", "warfarin"),
    ],
)
def test_a_medicine_taken_together_is_a_current_medication(catalog: Catalog, question: str,
                                                           medication: str) -> None:
    """"X uống cùng Y được không" asks whether the two go together: Y is checked against X's interactions
    (a miss says not found, never safe), not searched as a second drug's free-form question."""
    f = understand(catalog, question).frame
    assert f.turn_type == TurnType.PATIENT_ASSESSMENT and f.drug_ids == ("zentorin",)
    assert f.patient.current_medications == (medication,)


def test_taken_with_food_is_not_a_medication(catalog: Catalog) -> None:
    f = understand(catalog, "zentorin uống cùng bữa ăn được không").frame
    assert f.drug_ids == ("zentorin",) and f.patient.current_medications == ()
    assert f.turn_type != TurnType.PATIENT_ASSESSMENT


def test_patient_facts(catalog: Catalog) -> None:
    f = understand(catalog, "phụ nữ có thai bị suy gan dùng zentorin được không").frame
    assert f.turn_type == TurnType.PATIENT_ASSESSMENT
    assert f.patient.pregnant and f.patient.hepatic_impairment and not f.patient.renal_impairment
    f = understand(catalog, "trẻ 6 tháng tuổi uống zentorin được không").frame
    assert f.turn_type == TurnType.PATIENT_ASSESSMENT and f.patient.age_years == 0
    assert "trẻ sơ sinh và trẻ nhỏ" in f.patient.conditions


def test_pregnancy_word_alone_is_the_pregnancy_section(catalog: Catalog) -> None:
    f = understand(catalog, "phụ nữ mang thai dùng zentorin được không").frame
    assert (f.turn_type, f.section_key) == (TurnType.SECTION_QUESTION, "thoi_ky_mang_thai")
    assert f.patient.pregnant


def test_explicit_section_word_wins_over_patient_facts(catalog: Catalog) -> None:
    f = understand(catalog, "liều zentorin cho người suy thận").frame
    assert (f.turn_type, f.section_key) == (TurnType.SECTION_QUESTION, "lieu_luong_va_cach_dung")
    assert f.patient.renal_impairment


def test_current_medicine_alone_is_the_drug_asked_about(catalog: Catalog) -> None:
    f = understand(catalog, "đang dùng zentorin thì cần lưu ý gì").frame
    assert f.drug_ids == ("zentorin",) and f.patient.current_medications == ()


def test_no_drug_no_indication_is_a_corpus_question(catalog: Catalog) -> None:
    u = understand(catalog, "thuốc hư cấu nào gây khô miệng")
    assert u.frame.turn_type == TurnType.FREE_FORM and u.frame.drug_ids == () and not u.reason


def test_without_a_catalog_nothing_is_resolved() -> None:
    u = build_frame("chống chỉ định của zentorin", None, load_language())
    assert u.frame.drug_ids == () and u.reason == R.DECISION_REASON_DRUG_NOT_FOUND


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("Liều dùng của semaglutid là bao nhiêu?", "semaglutid"),
        ("rivaroxaban tuong tac thuoc", "rivaroxaban"),
        ("Tác dụng phụ của thuốc zentrofaxin", "zentrofaxin"),
        ("Apixaban có dùng cho bà bầu không?", "apixaban"),
        ("montelukast", "montelukast"),
    ],
)
def test_a_drug_the_formulary_does_not_have(catalog: Catalog, question: str, name: str) -> None:
    u = understand(catalog, question)
    assert u.reason == R.DECISION_REASON_DRUG_NOT_FOUND and u.detail == name and u.frame.drug_ids == ()


@pytest.mark.parametrize(
    "question",
    [
        "liều dùng bao nhiêu",
        "tác dụng phụ thế nào?",
        "bao quan o nhiet do nao",
        "có dùng cho bà bầu được không",
    ],
)
def test_no_drug_named_at_all_asks_which(catalog: Catalog, question: str) -> None:
    assert understand(catalog, question).reason == R.DECISION_REASON_MISSING_REQUIRED_FIELD


def test_drug_name_split_section_phrase(catalog: Catalog) -> None:
    assert understand(catalog, "ngừng zentorin đột ngột có sao không").frame.section_key == "than_trong"
