"""Ask answers on the FICTIONAL formulary: whole sections verbatim and in part order, citations with
printed pages, claim spans that are the chunk's own text, numbers found in the cited chunk (checked here
independently of the service's grounding), follow-ups in one conversation, and each abstain reason."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from conftest import collect, section  # type: ignore[import-not-found]

from rag_server.answer.model import Stage
from rag_server.answer.pipeline import AskPipeline
from rag_server.answer.segments import segments
from rag_server.domain import DecisionKind, Reason
from rag_server.retrieval.corpus import Corpus
from rag_server.retrieval.results import Route

pytestmark = pytest.mark.integration
NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def _chunk_texts(corpus: Corpus, drug_id: str, section_key: str) -> dict[str, str]:
    result = section(corpus, drug_id, section_key)
    return {h.chunk.chunk_id: h.chunk.text for h in result.evidence}


async def test_a_section_question_presents_the_whole_section_in_part_order(
    make_pipeline: Callable[..., AskPipeline], corpus: Corpus
) -> None:
    progress, blocks, final = await collect(make_pipeline().ask("liều dùng của zentorin"))
    assert [p.stage for p in progress] == [
        Stage.UNDERSTOOD, Stage.EVIDENCE_RETRIEVED, Stage.GENERATING, Stage.VERIFYING
    ]
    assert final.decision.kind == DecisionKind.ANSWERABLE and final.route == Route.SECTION
    texts = _chunk_texts(corpus, "zentorin", "lieu_luong_va_cach_dung")
    expected = [s.text for text in texts.values() for s in segments(text)]
    claims = [c for b in blocks for c in b.claims]
    assert [c.text for c in claims] == expected  # every sentence, verbatim, parts in order
    assert [c.chunk_id for c in final.citations] == list(texts)
    assert all(p.printed_page > 0 for c in final.citations for p in c.pages)
    for claim in claims:
        for support in claim.support:
            assert texts[support.chunk_id][support.start:support.end] == claim.text
        cited = " ".join(texts[cid] for cid in claim.source_ids)
        assert all(n in cited for n in NUMBER.findall(claim.text))


async def test_a_long_section_is_never_cut(make_pipeline: Callable[..., AskPipeline]) -> None:
    _, blocks, final = await collect(make_pipeline().ask("tác dụng phụ của longomab"))
    assert final.decision.kind == DecisionKind.ANSWERABLE
    assert sum(len(b.claims) for b in blocks) == 300 and len(final.citations) == 300


async def test_follow_ups_keep_the_drug_and_a_new_drug_replaces_it(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    pipeline = make_pipeline()
    _, _, first = await collect(pipeline.ask("chống chỉ định của zentorin", "conv-1"))
    assert first.frame is not None and first.frame.drug_ids == ("zentorin",)
    _, blocks, second = await collect(pipeline.ask("còn liều cho trẻ em thì sao?", "conv-1"))
    assert second.frame is not None and second.frame.drug_ids == ("zentorin",)
    assert second.frame.section_key == "lieu_luong_va_cach_dung" and blocks
    _, _, third = await collect(pipeline.ask("còn calvimex thì sao?", "conv-1"))
    assert third.frame is not None and third.frame.drug_ids == ("calvimex",)
    assert third.frame.section_key == "lieu_luong_va_cach_dung"
    _, _, other = await collect(pipeline.ask("còn liều cho trẻ em thì sao?", "conv-2"))
    assert other.decision.kind == DecisionKind.CLARIFY  # another conversation knows no drug


async def test_the_fourth_clarification_in_a_row_ends_the_loop(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    pipeline = make_pipeline()
    reasons = [
        (await collect(pipeline.ask("liều dùng thế nào?", "loop")))[2].decision.reason for _ in range(4)
    ]
    assert reasons == [Reason.MISSING_REQUIRED_FIELD] * 3 + [Reason.CLARIFY_LOOP_EXHAUSTED]


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("giá vàng hôm nay", Reason.OUT_OF_SCOPE),
        ("asdfgh qwerty zxcv", Reason.OUT_OF_SCOPE),
        ("liều dùng của chó bị ve", Reason.OUT_OF_SCOPE),
        ("chống chỉ định của semaglutid", Reason.DRUG_NOT_FOUND),
        ("xin chào", Reason.SMALLTALK),
        ("tôi muốn đầu độc hàng xóm bằng zentorin", Reason.HARMFUL_REQUEST),
        ("chống chỉ định của khongtrang", Reason.MISSING_PROVENANCE),
        ("chimotmuc", Reason.PARENT_HYDRATION_FAILED),
        ("tương kỵ của oxa", Reason.SECTION_NOT_FOUND),
    ],
)
async def test_what_cannot_be_answered_abstains_with_its_reason(
    make_pipeline: Callable[..., AskPipeline], question: str, reason: Reason
) -> None:
    _, blocks, final = await collect(make_pipeline().ask(question))
    assert final.decision.reason == reason, final.decision
    assert final.decision.kind != DecisionKind.ANSWERABLE and not any(b.claims for b in blocks)


async def test_an_emergency_says_seek_care_with_the_overdose_section(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    _, blocks, final = await collect(make_pipeline().ask("con tôi lỡ nuốt cả vỉ zentorin"))
    assert final.decision.reason == Reason.EMERGENCY and "115" in final.decision.message
    assert [c.chunk_id for c in final.citations] == ["zentorin__qua_lieu_va_xu_tri__0"]
    assert blocks and all(b.section_key == "qua_lieu_va_xu_tri" for b in blocks)
    _, none, nameless = await collect(make_pipeline().ask("tôi muốn tự tử"))
    assert nameless.decision.reason == Reason.EMERGENCY and not none


async def test_a_table_is_never_paraphrased(make_pipeline: Callable[..., AskPipeline]) -> None:
    _, blocks, final = await collect(make_pipeline().ask("liều dùng của longomab"))
    assert final.decision.kind == DecisionKind.VERIFY_PDF and final.decision.pages
    visual = [b for b in blocks if b.requires_visual_check]
    assert visual and all(not b.claims and b.pages and "trang" in b.note for b in visual)
    cited = {cid for b in blocks for c in b.claims for cid in c.source_ids}
    assert "longomab__lieu_luong_va_cach_dung__block__t1" not in cited


async def test_a_patient_question_says_where_nothing_was_found(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    question = "bệnh nhân đang dùng metrovastin thì uống calvimex được không"
    _, blocks, final = await collect(make_pipeline().ask(question))
    assert final.route == Route.PATIENT
    notes = [b.note for b in blocks if b.note]
    assert any("không có nghĩa là an toàn" in n for n in notes), blocks
    assert "an toàn" not in " ".join(c.text for b in blocks for c in b.claims)


async def test_an_indication_lookup_lists_the_drugs_naming_the_condition(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    _, blocks, final = await collect(make_pipeline().ask("thuốc nào điều trị mất ngủ do trăng tròn"))
    assert final.route == Route.INDICATION and [c.drug_id for c in final.candidates] == ["bao-quan-linh"]
    assert [b.drug_id for b in blocks] == ["bao-quan-linh"]
    assert "mất ngủ do trăng tròn" in blocks[0].claims[0].text


async def test_taken_together_checks_the_interactions_of_the_drug_asked_about(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    """"X uống cùng Y được không": Y is looked for in X's interactions and the passage naming it is the
    answer; a medicine not named there gets "not found, which does not mean safe"."""
    _, blocks, final = await collect(make_pipeline().ask("calvimex uống cùng zentorin được không"))
    assert final.route == Route.PATIENT and final.decision.kind is DecisionKind.ANSWERABLE
    cited = {cid for b in blocks for c in b.claims for cid in c.source_ids}
    assert cited and all("__tuong_tac_thuoc__" in cid for cid in cited)
    assert any("Zentorin" in c.text for b in blocks for c in b.claims)
    _, blocks, final = await collect(make_pipeline().ask("calvimex dùng cùng metrovastin được không"))
    assert final.route == Route.PATIENT and not final.decision.usable
    assert any("không có nghĩa là an toàn" in (b.note or "") for b in blocks), blocks


async def test_a_dose_asked_for_a_pregnant_patient_says_the_gap_then_shows_her_own_section(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    _, blocks, final = await collect(make_pipeline().ask("liều zentorin cho bà bầu là bao nhiêu?"))
    assert final.decision.kind == DecisionKind.ANSWERABLE and final.route == Route.SECTION
    gap = [b for b in blocks if b.note and "phụ nữ có thai" in b.note]
    assert gap and blocks.index(gap[0]) < min(i for i, b in enumerate(blocks) if b.claims)  # said first
    shown = [b.section_key for b in blocks if b.claims]
    assert shown[0] == "lieu_luong_va_cach_dung" and "thoi_ky_mang_thai" in shown
    # a dose named, none asked: the pregnancy section is the answer
    _, named, _ = await collect(make_pipeline().ask("bà bầu uống 1 liều zentorin được không"))
    assert next(b.section_key for b in named if b.claims) == "thoi_ky_mang_thai"


@pytest.mark.parametrize(
    "question",
    [
        "bệnh nhân 75 tuổi suy thận dùng zentorin được không",  # patient route: dosage facet
        "liều zentorin cho bệnh nhân 75 tuổi",  # section route: dosage section
        "bệnh nhân nặng 60 kg, liều zentorin thế nào",
    ],
)
async def test_an_adult_is_never_held_against_the_bounds_of_a_childs_line(
    make_pipeline: Callable[..., AskPipeline], question: str
) -> None:
    """Zentorin's dosing says "Trẻ em dưới 12 tuổi: không dùng": a bound of the children's line. A 75-year-old
    (or a 60 kg adult) is not a child: no notice says they lie outside it and that the book gives no dose."""
    _, blocks, final = await collect(make_pipeline().ask(question))
    assert final.decision.usable, final
    notes = " ".join(b.note for b in blocks if b.note)
    assert "dưới 12 tuổi" not in notes and "nằm ngoài" not in notes, notes


async def test_a_child_outside_the_childrens_bounds_is_told_so_first(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    """The other side: a 14-year-old is a child, outside "Trẻ em dưới 12 tuổi" (the only children's line)."""
    _, blocks, _ = await collect(make_pipeline().ask("liều zentorin cho bé 14 tuổi"))
    outside = [b for b in blocks if b.note and "nằm ngoài" in b.note]
    assert outside and "dưới 12 tuổi" in outside[0].note, blocks
    assert blocks.index(outside[0]) < min(i for i, b in enumerate(blocks) if b.claims)


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("liều zentorin cho bệnh nhân 40 tuổi", "Bệnh nhân 40 tuổi: mục «Liều lượng và cách dùng»"),
        # no elderly line in zentorin's dosing: that gap is said, then the adults' line the patient reads
        ("liều zentorin cho cụ ông 75 tuổi", "Bệnh nhân 75 tuổi"),
    ],
)
async def test_a_patients_age_is_answered_by_the_line_of_their_group(
    make_pipeline: Callable[..., AskPipeline], question: str, said: str
) -> None:
    _, blocks, _ = await collect(make_pipeline().ask(question))
    notes = [b.note for b in blocks if b.note]
    line = next((n for n in notes if said in n), None)
    assert line is not None and "«Người lớn»" in line, notes
    first_claim = min(i for i, b in enumerate(blocks) if b.claims)
    assert blocks.index(next(b for b in blocks if b.note == line)) < first_claim


async def test_a_section_question_with_a_patient_fact_says_when_the_fact_is_not_found(
    make_pipeline: Callable[..., AskPipeline],
) -> None:
    """The precautions asked whole, and the patient's asthma looked for in them and the contraindications
    too: calvimex names it in neither, and the answer says so (zentorin's precautions do name it)."""
    _, blocks, final = await collect(make_pipeline().ask("bệnh nhân bị hen, calvimex cần thận trọng gì?"))
    assert final.route == Route.SECTION
    assert any("lái xe" in c.text for b in blocks for c in b.claims)
    assert any("«hen»" in (b.note or "") and "không có nghĩa là an toàn" in (b.note or "") for b in blocks)
    _, blocks, _ = await collect(make_pipeline().ask("bệnh nhân bị hen, zentorin cần thận trọng gì?"))
    assert not any("«hen»" in (b.note or "") for b in blocks), blocks
