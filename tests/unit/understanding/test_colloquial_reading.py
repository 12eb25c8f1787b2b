"""The reading of colloquial questions (fictional catalog; NOT medical information): what the patient has
is no effect of the drug, fillers typed without diacritics, weak cues that add up or yield to an effect,
a second medicine, effects listed together, medicines typed in Vietnamese, the follow-ups a conversation
carries."""

from __future__ import annotations

import pytest
from fictional_formulary import build_chunks

from rag_server.domain import Reason
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.frame import Prior, QueryFrame, TurnType
from rag_server.understanding.reading import read
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import Language, load_language

LANGUAGE = load_language()
ROLES = load_vocabulary().roles
EARLIER = Prior(("zentorin",), "lieu_luong_va_cach_dung")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(build_chunks(), LANGUAGE)


def frame(query: str, catalog: Catalog, prior: Prior | None = None) -> QueryFrame:
    return (read(query, catalog, LANGUAGE, prior) if prior else read(query, catalog, LANGUAGE)).frame


@pytest.mark.parametrize(
    ("query", "effect"),
    [
        ("bị đau đầu khi uống zentorin", "đau đầu"),  # a link ties the cue to the drug
        ("uống zentorin bị đau đầu", "đau đầu"),
        ("đang bị đau đầu uống zentorin được không", None),  # what the patient has
        ("bau 2 thang bi viem duong tieu uong zentorin duoc ko", None),
    ],
)
def test_a_weak_cue_before_the_drug_is_what_the_patient_has(
    catalog: Catalog, query: str, effect: str | None
) -> None:
    got = frame(query, catalog).effect
    assert (got.text if got else None) == effect


def test_a_pregnancy_by_its_term(catalog: Catalog) -> None:
    assert frame("bau 2 thang uong zentorin duoc ko", catalog).patient.pregnant
    assert frame("thai 32 tuần bị đau đầu, zentorin có an toàn không", catalog).patient.pregnant
    assert not frame("zentorin thải qua thận mấy tuần", catalog).patient.pregnant


def test_typed_without_diacritics_a_phrase_on_a_function_word_yields(catalog: Catalog) -> None:
    got = frame("dang dung zentorin ma bi tieu chay keo dai thi can lam gi", catalog)
    terms = [t.text for t in got.asked_terms]
    assert "tieu chay" in terms and "bi tieu" not in terms  # "bị tiêu chảy", not "bí tiểu"
    assert "dang dung" not in terms and "can lam" not in terms  # fillers, whatever the segmentation says


def test_a_filler_inside_a_word_is_no_filler(catalog: Catalog) -> None:
    assert "thuốc lá" in [t.text for t in frame("thuốc lá điện tử giá bao nhiêu", catalog).asked_terms]


def test_weak_cues_add_up_and_yield_to_an_effect(catalog: Catalog) -> None:
    vocabulary = load_vocabulary()
    found = vocabulary.resolve_section("để trong xe hơi mùa hè có bị hư không")
    assert found is not None and found.section_key == "do_on_dinh_va_bao_quan"
    heat = frame("zentorin có làm nóng người không", catalog)
    assert heat.section_key == "" and heat.turn_type == TurnType.FREE_FORM


def test_a_second_medicine_turns_a_one_drug_cue_into_the_interaction(catalog: Catalog) -> None:
    interaction = ROLES.interaction_facet[0]
    assert frame("zentorin có làm giảm hấp thu ketoconazol không", catalog).section_key == interaction
    assert frame("zentorin hấp thu thế nào", catalog).section_key == ROLES.pharmacokinetics
    assert frame("zentorin nồng độ lactat trong máu", catalog).section_key != ROLES.interaction_facet[0]


def test_effects_listed_together_are_one_effect(catalog: Catalog) -> None:
    effect = frame("zentorin có làm mệt, nhức đầu không", catalog).effect
    assert effect is not None and "mệt" in effect.forms and "nhức đầu" in effect.forms


def test_medicines_typed_in_vietnamese_and_where_their_list_ends(catalog: Catalog) -> None:
    iron = frame("Bệnh nhân đang uống viên sắt, cần dùng zentorin thì uống thế nào?", catalog)
    assert iron.patient.current_medications == ("viên sắt",) and iron.drug_ids == ("zentorin",)
    added = frame("dang dung verapamil them zentorin duoc khong", catalog)
    assert added.patient.current_medications == ("verapamil",) and added.drug_ids == ("zentorin",)
    assert added.turn_type == TurnType.PATIENT_ASSESSMENT


def test_a_conversation_keeps_its_drug_for_everyday_words_and_unknown_medicines(catalog: Catalog) -> None:
    storage = read("lọ mở rồi để nhiệt độ phòng được không?", catalog, LANGUAGE, EARLIER)
    assert storage.frame.drug_ids == ("zentorin",) and not storage.reason
    taking = read("nếu đang uống propranolol thì có còn tác dụng không", catalog, LANGUAGE, EARLIER)
    assert taking.frame.drug_ids == ("zentorin",) and taking.reason is not Reason.DRUG_NOT_FOUND
    alone = read("nếu đang uống propranolol thì có còn tác dụng không", catalog, LANGUAGE)
    assert alone.reason is Reason.DRUG_NOT_FOUND  # no conversation: the name is not in the formulary


def test_a_class_member_carries_its_class(catalog: Catalog) -> None:
    language: Language = LANGUAGE
    forms = [f.text for f in language.forms_of[("aspirin",)]]
    assert "salicylat" in forms


def test_a_medicine_added_in_a_conversation_asks_how_the_two_interact(catalog: Catalog) -> None:
    interaction = ROLES.interaction_facet[0]
    added = read("bà muốn mua thêm diclofenac uống chung cho đỡ thì được không?", catalog, LANGUAGE, EARLIER)
    assert added.frame.drug_ids == ("zentorin",) and added.frame.section_key == interaction
    taking = read("nếu đang uống propranolol thì có còn tác dụng không", catalog, LANGUAGE, EARLIER)
    assert taking.frame.section_key == interaction
    # compared with, not taken with: the conversation's drug's own section
    compared = read("so với warfarin thì thuốc này nằm trong máu lâu hơn không?", catalog, LANGUAGE, EARLIER)
    assert compared.frame.drug_ids == ("zentorin",) and compared.frame.section_key == ROLES.pharmacokinetics


def test_the_nursling_is_not_the_patient(catalog: Catalog) -> None:
    from rag_server.understanding.frame import Group

    nursing = frame("is zentorin safe while I'm nursing a newborn?", catalog)
    assert nursing.patient.breastfeeding and Group.INFANT not in nursing.patient.groups
    assert nursing.section_key == ROLES.breastfeeding


def test_the_mothers_own_age_is_kept_and_the_nurslings_dropped(catalog: Catalog) -> None:
    mother = frame("tôi 38 tuổi đang cho con bú, uống zentorin được không", catalog)
    assert mother.patient.breastfeeding and mother.patient.age_years == 38
    nursling = frame("tôi đang cho con 3 tuổi bú, uống zentorin được không", catalog)
    assert nursling.patient.breastfeeding and nursling.patient.age_years is None


def test_a_medicine_named_after_its_condition_class_is_taken(catalog: Catalog) -> None:
    gout = frame("bà đang uống thuốc gút probenecid, dùng chung zentorin được không", catalog)
    assert gout.patient.current_medications == ("probenecid",)
    two = frame("ông đang uống thuốc hen salbutamol với thuốc dạ dày omeprazol, thêm zentorin được không",
                catalog)
    assert two.patient.current_medications == ("salbutamol", "omeprazol")


def test_stopping_or_taking_again_while_pregnant_or_nursing_asks_that_section(catalog: Catalog) -> None:
    pregnant = frame("I just found out I'm 6 weeks pregnant and I'm on zentorin - should I stop it?", catalog)
    assert pregnant.section_key == ROLES.pregnancy
    nursing = frame("đang cho bé bú mà đau lại, có uống lại zentorin được không", catalog)
    assert nursing.section_key == ROLES.breastfeeding


def test_a_medicine_the_patient_is_allergic_to_keeps_the_conversations_drug(catalog: Catalog) -> None:
    allergic = read("mà em bị dị ứng Bactrim, vậy uống thuốc đó có được không?", catalog, LANGUAGE, EARLIER)
    assert allergic.frame.drug_ids == ("zentorin",) and allergic.reason is not Reason.DRUG_NOT_FOUND
    assert allergic.frame.patient.allergies
    alone = read("mà em bị dị ứng Bactrim, vậy uống thuốc đó có được không?", catalog, LANGUAGE)
    assert alone.reason is Reason.DRUG_NOT_FOUND


def test_words_pointing_back_keep_the_conversations_drug(catalog: Catalog) -> None:
    query = "I've been seizure-free for 3 years on this, how slowly do I have to taper?"
    assert read(query, catalog, LANGUAGE, EARLIER).frame.drug_ids == ("zentorin",)
    assert read(query, catalog, LANGUAGE).reason is Reason.DRUG_NOT_FOUND  # no conversation to point at
    # a new drug asked about is still not the conversation's
    assert read("còn semaglutid thì sao", catalog, LANGUAGE, EARLIER).reason is Reason.DRUG_NOT_FOUND


def test_nursing_a_child_whose_age_is_told_in_between(catalog: Catalog) -> None:
    nursing = frame("Mẹ đang cho bé 2 tháng bú, phải uống zentorin, bé có bị gì không?", catalog)
    assert nursing.patient.breastfeeding and nursing.patient.age_months is None
    fed = frame("cho bé uống zentorin rồi bú được không", catalog)  # feeding after a dose: no nursing mother
    assert not fed.patient.breastfeeding


def test_a_chat_age_and_a_question_after_the_medicine(catalog: Catalog) -> None:
    assert frame("be 2t 12kg uong zentorin bn mg 1 lan", catalog).patient.age_years == 2  # "2t": 2 tuổi
    on = frame("I'm pregnant and I'm on zentorin - should I stop it right away?", catalog)
    assert on.patient.current_medications == ()  # "should I stop" is the question, no medicine


def test_a_symptom_blamed_on_the_drug_is_asked_even_when_it_is_a_condition(catalog: Catalog) -> None:
    blamed = frame("con 15 tuoi uong zentorin may hom keu dau khop goi, co phai tai thuoc ko", catalog)
    assert blamed.turn_type == TurnType.FREE_FORM and blamed.effect is not None
    assert "đau ở các khớp" in blamed.effect.forms  # as the book words it
    had = frame("con 15 tuổi bị đau khớp, uống zentorin được không", catalog)
    assert had.turn_type == TurnType.PATIENT_ASSESSMENT  # what the patient has, no blame


def test_a_name_asked_to_be_another_asks_for_the_brand_names(catalog: Catalog) -> None:
    brands = load_vocabulary().roles.brands
    unknown = frame("hộp thuốc ghi Zentrofax, vậy là zentorin hả", catalog)
    assert unknown.section_key == brands and unknown.drug_ids == ("zentorin",)
    klass = frame("Zentrofax là thuốc gì vậy, có phải zentorin không", catalog)
    assert klass.section_key == brands  # the class cue yields: one name asked to be another
    alone = frame("zentorin vậy là uống sau ăn hả", catalog)
    assert alone.section_key != brands  # no second name: no identity asked


@pytest.mark.parametrize(
    ("query", "effect"),
    [
        # read from answers_dev4: English "does X cause Y" asked the way people write
        ("Since starting zentorin I lie awake at night. Is insomnia one of its side effects?", "insomnia"),
        ("Zentorin leaves me queasy for an hour after each dose. Is nausea listed?", "nausea"),
        ("Started zentorin last week, now a sore throat - is that on the side-effect list?", "sore throat"),
        ("Both my ankles puff up by evening since I started zentorin - known side effect?", "ankles puff up"),
        ("Does zentorin make people nauseous?", "nauseous"),
        # a dosing cue after a word of the effect said again counts how often it comes
        ("Uống zentorin có làm đi tiểu nhiều, đêm phải dậy đi tiểu mấy lần không?", "đi tiểu nhiều"),
        # told, then asked again after the cue
        ("Mỗi lần uống zentorin là tôi buồn ngủ rũ rượi, thuốc này có gây buồn ngủ không?", "buồn ngủ"),
    ],
)
def test_an_effect_asked_is_read_before_a_section_cue_beside_it(
    catalog: Catalog, query: str, effect: str
) -> None:
    got = frame(query, catalog)
    assert got.effect is not None and got.effect.text == effect, got.effect
    assert got.section_key in ("", *ROLES.effect_sections)  # the effect route, never the dosing section


def test_a_dose_asked_for_a_symptom_is_still_a_dosing_question(catalog: Catalog) -> None:
    dosage = "lieu_luong_va_cach_dung"
    assert frame("bị buồn nôn thì uống zentorin liều bao nhiêu", catalog).section_key == dosage


@pytest.mark.parametrize(
    "query",
    [
        "zentorin dose cho bà bầu là mấy viên một ngày?",
        "zentorin dosing cho mẹ đang breastfeeding thế nào?",
        "sản phụ đang cho con bú, liều zentorin có cần khác người lớn thường không?",
    ],
)
def test_a_quantity_asked_for_a_pregnant_or_nursing_patient_reads_the_dose(
    catalog: Catalog, query: str
) -> None:
    got = frame(query, catalog)
    assert got.section_key == "lieu_luong_va_cach_dung", got.section_key


def test_tablets_named_beside_a_breastfeeding_question_ask_no_dose(catalog: Catalog) -> None:
    query = "con mới 3 tháng đang bú mẹ, uống mấy viên zentorin giảm đau thì sữa có ảnh hưởng bé không"
    assert frame(query, catalog).section_key == "thoi_ky_cho_con_bu"


@pytest.mark.parametrize(
    ("query", "condition"),
    [
        ("ong bi benh Crohn, zentorin dung duoc ko", "viêm ruột"),
        ("bà bị thiếu máu nặng, bác sĩ định cho zentorin, có được không", "rối loạn tạo máu"),
        ("bệnh nhân nhiễm toan chuyển hoá dùng zentorin được không", "nhiễm toan chuyển hóa"),
        ("patient had a stroke last year, can he take zentorin?", "tai biến mạch máu não"),
        ("Ông bị COPD, dùng zentorin được không?", "bệnh phổi tắc nghẽn mạn tính"),
        ("anh tôi lái taxi cả ngày, uống zentorin được không?", "lái xe"),
        ("HIV patient who drinks a few beers most nights - can he take zentorin?", "nghiện rượu"),
        ("bn ghép thận 3 năm, kê zentorin thì cần dặn gì?", "ghép tạng"),
    ],
)
def test_a_contraindicated_condition_in_everyday_words_is_the_patients(
    catalog: Catalog, query: str, condition: str
) -> None:
    got = frame(query, catalog)
    assert condition in got.patient.conditions and got.turn_type is TurnType.PATIENT_ASSESSMENT


@pytest.mark.parametrize(
    "query",
    [
        "Xử trí khi zentorin gây phát ban hoặc hạ natri máu?",  # a list after the marker
        "bac si noi kali mau thap, co phai do zentorin khong",  # its cause asked after it
        "uống zentorin dài ngày thì có bị thiếu máu không",
    ],
)
def test_an_effect_asked_about_is_no_condition_of_the_patient(catalog: Catalog, query: str) -> None:
    got = frame(query, catalog)
    assert not got.patient.conditions and got.effect is not None


def test_an_effect_cue_inside_a_patient_fact_is_none(catalog: Catalog) -> None:
    got = frame("bệnh nhân đang dùng zentorin, tuần sau mổ gây mê toàn thân, có cần lưu ý gì không?", catalog)
    assert got.effect is None and "phẫu thuật" in got.patient.conditions


@pytest.mark.parametrize(
    ("query", "medicine"),
    [
        ("bác sĩ tim muốn phối hợp disopyramid với zentorin cho loạn nhịp, có gì đáng ngại không",
         "disopyramid"),
        ("mẹ uống zentorin, giờ muốn mua orlistat giảm cân thì có ảnh hưởng gì không", "orlistat"),
        ("ông uống pentoxifylin cho đỡ đau chân, giờ thêm zentorin thì có sao không", "pentoxifylin"),
    ],
)
def test_a_medicine_to_be_combined_or_bought_asks_how_the_two_interact(
    catalog: Catalog, query: str, medicine: str
) -> None:
    got = frame(query, catalog)  # the patient's medicine, or the interactions asked of a class member named
    assert medicine in got.patient.current_medications or got.section_key == ROLES.interaction_facet[0]


def test_a_member_belongs_to_the_class_a_monograph_names() -> None:
    classes = {c.name for c in LANGUAGE.clinical.classes if "phenytoin" in c.members}
    assert "hydantoin" in classes  # "dẫn chất coumarin, hydantoin…" names phenytoin
