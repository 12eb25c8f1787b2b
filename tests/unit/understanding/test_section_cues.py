"""Section cues beyond the plain phrases: weak hints (frequency, meals) used only when no phrase matched,
`outranks` (an overdose word beats a dosage frame), quantity phrases, and how the frame treats a weak cue.
Fictional drugs only (NOT medical information)."""

from __future__ import annotations

import pytest
from fictional_formulary import build_chunks

from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.frame import Reading as Understanding
from rag_server.understanding.frame import TurnType
from rag_server.understanding.reading import read as build_frame
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language

R = pb.DecisionReason
DOSAGE = "lieu_luong_va_cach_dung"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(build_chunks(), load_language())


def understand(catalog: Catalog, q: str) -> Understanding:
    return build_frame(q, catalog, load_language())


@pytest.mark.parametrize(
    "question",
    [
        "uống hằng tuần hay hằng ngày?",
        "uong hang tuan hay hang ngay",
        "uống lúc đói hay lúc no",
        "uống trước bữa ăn được không",
        "dùng trong bao lâu",
    ],
)
def test_hints_are_weak_dosage_cues(question: str) -> None:
    match = load_vocabulary().resolve_section(question)
    assert match is not None and (match.section_key, match.weak) == (DOSAGE, True)


@pytest.mark.parametrize(
    ("question", "section"),
    [
        ("uống rượu hằng ngày có sao không", "tuong_tac_thuoc"),  # a phrase beats a hint
        ("dùng hằng ngày có tác dụng phụ gì", "tac_dung_khong_mong_muon"),
        ("uống bao nhiêu thì bị ngộ độc", "qua_lieu_va_xu_tri"),  # outranks, though shorter
        ("uống mấy viên thì quá liều", "qua_lieu_va_xu_tri"),
        ("xịt mấy nhát một lần", DOSAGE),
        ("nhỏ mấy giọt", DOSAGE),
        ("bé uống mấy gói", DOSAGE),
        ("uống cách nhau bao lâu", DOSAGE),
        ("uống trước hay sau ăn", DOSAGE),
        ("có bài tiết qua sữa không", "thoi_ky_cho_con_bu"),
        ("có qua nhau thai không", "thoi_ky_mang_thai"),
        ("thuộc loại thuốc nào", "loai_thuoc"),
    ],
)
def test_phrases_and_precedence(question: str, section: str) -> None:
    match = load_vocabulary().resolve_section(question)
    assert match is not None and match.section_key == section and not match.weak


def test_a_weak_cue_with_a_drug_is_a_section_question(catalog: Catalog) -> None:
    u = understand(catalog, "Zentorin uống hằng tuần hay hằng ngày?")
    assert (u.frame.turn_type, u.frame.section_key) == (TurnType.SECTION_QUESTION, DOSAGE)


def test_a_quantity_phrase_beats_a_condition_named_in_passing(catalog: Catalog) -> None:
    u = understand(catalog, "Zentorin xịt mấy nhát khi lên cơn hen?")
    assert (u.frame.turn_type, u.frame.section_key) == (TurnType.SECTION_QUESTION, DOSAGE)


def test_a_weak_cue_never_outweighs_patient_facts(catalog: Catalog) -> None:
    u = understand(catalog, "người suy thận uống zentorin hằng ngày được không")
    assert u.frame.turn_type == TurnType.PATIENT_ASSESSMENT and u.frame.patient.renal_impairment


def test_a_weak_cue_without_a_drug_asks_for_nothing(catalog: Catalog) -> None:
    # Nothing medical is named either: out of scope, never searched (no section is guessed).
    u = understand(catalog, "tập thể dục hằng ngày có tốt không")
    assert (u.frame.turn_type, u.reason, u.frame.section_key) == (
        TurnType.OUT_OF_SCOPE,
        R.DECISION_REASON_OUT_OF_SCOPE,
        "",
    )
    assert understand(catalog, "liều dùng bao nhiêu").reason == R.DECISION_REASON_MISSING_REQUIRED_FIELD


@pytest.mark.parametrize(
    ("question", "section"),
    [
        # Two cues: the more specific section wins (specificity, then the longer phrase, then the earlier).
        ("liều bao nhiêu thì bị ngộ độc", "qua_lieu_va_xu_tri"),
        ("tác dụng phụ xử trí ra sao", "huong_dan_cach_xu_tri_adr"),
        ("chỉ định và chống chỉ định", "chong_chi_dinh"),
        ("liều dùng để điều trị gút", "lieu_luong_va_cach_dung"),
        ("thận trọng khi cho con bú", "thoi_ky_cho_con_bu"),
        ("bảo quản dung dịch sau khi pha để tránh tương kỵ", "tuong_ky"),
        ("xử trí khi bị quá liều", "qua_lieu_va_xu_tri"),
        # Colloquial and partial cues.
        ("kỵ với thuốc tiêm nào", "tuong_ky"),
        ("không pha chung với dung dịch nào", "tuong_ky"),
        ("xử trí khi bị phát ban", "huong_dan_cach_xu_tri_adr"),
        ("ai không được uống", "chong_chi_dinh"),
        ("cất ở đâu", "do_on_dinh_va_bao_quan"),
    ],
)
def test_the_more_specific_cue_wins(question: str, section: str) -> None:
    match = load_vocabulary().resolve_section(question)
    assert match is not None and match.section_key == section, match


def test_every_cue_is_reported_in_text_order() -> None:
    cues = load_vocabulary().cues("chỉ định và chống chỉ định")
    assert [c.section_key for c in cues] == ["chi_dinh", "chong_chi_dinh"]


def test_thoi_ky_is_no_incompatibility_cue() -> None:
    # "kỵ" is a cue, but never inside "thời kỳ" (the longer phrase claims its words first).
    match = load_vocabulary().resolve_section("thoi ky mang thai")
    assert match is not None and match.section_key == "thoi_ky_mang_thai"


@pytest.mark.parametrize(
    ("question", "section"),
    [
        # the words of a patient's condition are no cue of the sections that yield to it
        ("bệnh nhân chạy thận nhân tạo dùng zentorin liều bao nhiêu", DOSAGE),
        ("bn chạy thận dùng zentorin liều sao", DOSAGE),
        ("patients on dialysis zentorin dose", DOSAGE),
        ("mẹ bị rối loạn chuyển hóa porphyrin dùng zentorin có phải cẩn thận gì không", "than_trong"),
        # the same words asked about, not stated of the patient, still cue the section
        ("quá liều zentorin có lọc máu được không", "qua_lieu_va_xu_tri"),
        ("zentorin có loại được bằng lọc máu không", "qua_lieu_va_xu_tri"),
        ("zentorin chuyển hóa ở đâu", "duoc_dong_hoc"),
    ],
)
def test_a_cue_inside_a_patients_condition_yields_to_it(
    catalog: Catalog, question: str, section: str
) -> None:
    assert understand(catalog, question).frame.section_key == section


def test_a_dialysis_patient_without_another_cue_is_a_patient_question(catalog: Catalog) -> None:
    frame = understand(catalog, "người đang lọc máu uống zentorin có được không").frame
    assert frame.section_key != "qua_lieu_va_xu_tri"
    assert frame.patient.renal_impairment


def test_a_dosing_cue_right_after_an_effect_says_how_often_it_comes(catalog: Catalog) -> None:
    frame = understand(catalog, "uong zentorin bi di ngoai phan long may lan mot ngay").frame
    assert frame.section_key == "" and frame.effect is not None
    assert understand(catalog, "zentorin uống mấy lần một ngày").frame.section_key == DOSAGE


def test_a_second_cue_of_a_section_the_drug_has_is_read_when_the_first_is_not_in_its_monograph(
    catalog: Catalog,
) -> None:
    # zentorin's monograph has no incompatibility section; its storage section answers how long it keeps
    question = "zentorin pha với glucose 5% từ thứ Hai, tới thứ Sáu còn treo được không"
    assert understand(catalog, question).frame.section_key == "do_on_dinh_va_bao_quan"
    # one cue only: the section asked is the one the book does not have (answered SECTION_NOT_FOUND)
    assert understand(catalog, "tương kỵ của zentorin").frame.section_key == "tuong_ky"


def test_two_names_of_one_drug_asked_to_be_the_same_ask_for_the_brands(catalog: Catalog) -> None:
    # "Zentorix" is a brand of zentorin in the fictional formulary
    assert understand(catalog, "Zentorix co phai zentorin ko").frame.section_key == "ten_thuong_mai"
    # "có phải" between a drug and a medicine the book lacks asks no identity
    frame = understand(catalog, "dang uong zentorin ma dung them digoxin thi co phai kiem tra kali ko").frame
    assert frame.section_key != "ten_thuong_mai"


@pytest.mark.parametrize(
    ("question", "section"),
    [
        # typed with diacritics, "nhau" (each other) is that word, no "nhậu" (drinking)
        ("bé nặng 25 kg, bẻ đôi viên zentorin, sáng với tối uống bằng nhau hay khác nhau", DOSAGE),
        # "viên nang" (a capsule) is no "nắng" (sunshine), "cần chỗ mát" is
        ("tủ nhà mình khoảng 24 độ, nghe nói viên nang zentorin cần chỗ mát hơn, có đúng không",
         "do_on_dinh_va_bao_quan"),
    ],
)
def test_a_word_typed_without_diacritics_in_an_accented_question_is_that_word(
    catalog: Catalog, question: str, section: str
) -> None:
    assert understand(catalog, question).frame.section_key == section


def test_a_question_typed_without_any_diacritics_still_matches_by_folding(catalog: Catalog) -> None:
    # all folded: "lieu" is "liều"; a chat abbreviation read as words ("bn" -> "bệnh nhân") is not typed
    # with diacritics, so the question stays one typed without them
    assert understand(catalog, "bn glocom, zentorin tiem TM lieu dau bao nhieu").frame.section_key == DOSAGE
    assert load_vocabulary().resolve_section("uong zentorin xong di nhau duoc ko") is not None


@pytest.mark.parametrize(
    ("question", "section"),
    [
        # implicit cues read from colloquial_dev8 (our own words): storage, tissue levels, strengths on sale,
        # the target of the drug, stopping it at once, used on its own, a brand checked
        ("vỉ zentorin bị ướt sũng mồ hôi, thuốc vậy có còn tốt không", "do_on_dinh_va_bao_quan"),
        ("is a damp basement a bad place to keep his zentorin?", "do_on_dinh_va_bao_quan"),
        ("zentorin có nán lại trong máu lâu hơn ở người xơ gan không", "duoc_dong_hoc"),
        ("is there a 7.5 mg zentorin tablet on the market?", "dang_thuoc_va_ham_luong"),
        ("zentorin nhắm vào những loại tế bào nào", "duoc_ly_va_co_che_tac_dung"),
        ("ba thấy khỏe nên tính bỏ zentorin luôn từ mai, làm vậy được không", "than_trong"),
        ("can zentorin be used on its own when diet is not enough?", "chi_dinh"),
        ("tiệm đưa hộp Zentorix, có đúng thuốc đó không", "ten_thuong_mai"),
    ],
)
def test_implicit_cues_of_the_eighth_split(catalog: Catalog, question: str, section: str) -> None:
    assert understand(catalog, question).frame.section_key == section
