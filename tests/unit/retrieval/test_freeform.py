"""The free-form route's search query (names out, formulary terms in), its section prior and the prior's
effect on the reranked order. The reranker is the real offline one (lexical part, no embedder).
Fictional texts only (NOT medical information)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag_server.domain import Chunk, ChunkKind, Hit, ScoreKind, SourceRef, chunk_id_for
from rag_server.providers.rerank.offline import OfflineReranker
from rag_server.retrieval.freeform import (
    answer_sections,
    expand,
    name_spans,
    section_prior,
    without_spans,
)
from rag_server.retrieval.search import order_with_prior, rerank_hits
from rag_server.retrieval.timing import Timings
from rag_server.text.match import phrase
from rag_server.understanding import load_rules
from rag_server.vocabulary import load_vocabulary

RULES = load_rules()


def hit(section_key: str, text: str, score: float = 0.5) -> Hit:
    chunk = Chunk(
        chunk_id=chunk_id_for("zentorin", section_key, 0),
        drug_id="zentorin",
        drug_name="ZENTORIN",
        section_key=section_key,
        section_title=section_key,
        part_index=0,
        chunk_kind=ChunkKind.PROSE,
        text=text,
        source_refs=[SourceRef(document_id="fictional0000003", physical_page=3, printed_page=1)],
    )
    return Hit(chunk, score, ScoreKind.FUSED)


def test_names_are_taken_out_of_the_query() -> None:
    query = "Nhịp tim chậm có được dùng Zento 50 không?"
    spans = name_spans(query, [phrase("Zento 50"), phrase("zentorin")])
    assert spans == [(6, 8)]
    assert without_spans(query, spans) == "nhịp tim chậm có được dùng không"
    assert without_spans("Zentorin?", name_spans("Zentorin?", [phrase("zentorin")])) == ""


def test_expand_appends_formulary_terms_once() -> None:
    assert expand("trước khi mổ phải làm gì", RULES) == "trước khi mổ phải làm gì phẫu thuật"
    assert expand("mổ hay phẫu thuật", RULES) == "mổ hay phẫu thuật"  # already there
    assert expand("bị hạ đường huyết", RULES).endswith("glucose máu glucose huyết")
    assert expand("không có gì", RULES) == "không có gì"
    assert expand("truoc khi mo", RULES) == "truoc khi mo"  # "mo" may be "mở", "mỡ": one word needs accents
    assert expand("ha duong huyet", RULES).endswith("glucose máu glucose huyết")  # several words: folded
    assert expand("dùng với aspirin", RULES).endswith("salicylat acid acetylsalicylic")


@pytest.mark.parametrize(
    ("query", "favoured"),
    [
        ("nhịp tim chậm có được dùng không", "chong_chi_dinh"),
        ("có làm lạnh tay chân không", "tac_dung_khong_mong_muon"),
        ("bị loét miệng thì xử lý sao", "huong_dan_cach_xu_tri_adr"),
        ("dùng với aspirin có sao không", "tuong_tac_thuoc"),
        ("đau gân có phải ngừng thuốc không", "than_trong"),
        ("ức chế enzym ở ruột ra sao", "duoc_ly_va_co_che_tac_dung"),
    ],
)
def test_cues_favour_their_sections(query: str, favoured: str) -> None:
    prior = section_prior(query, RULES)
    assert prior[favoured] == RULES.prior_weight == max(prior.values())


def test_second_sections_get_less_and_population_sections_are_demoted() -> None:
    w = RULES.prior_weight
    prior = section_prior("có được dùng không", RULES)
    assert prior["than_trong"] == pytest.approx(w / 2)
    assert prior["thoi_ky_mang_thai"] == prior["thoi_ky_cho_con_bu"] == -w
    assert section_prior("thuốc này thế nào", RULES) == {"thoi_ky_mang_thai": -w, "thoi_ky_cho_con_bu": -w}
    assert section_prior("có được dùng không", replace(RULES, prior_weight=0.0)) == {}


def test_the_prior_reorders_close_scores_only() -> None:
    hits = [hit("qua_lieu_va_xu_tri", "a"), hit("chong_chi_dinh", "b"), hit("tac_dung_khong_mong_muon", "c")]
    prior = {"chong_chi_dinh": 0.1}
    assert [i for i, _ in order_with_prior(hits, [0.74, 0.66, 0.5], prior)] == [1, 0, 2]
    assert [i for i, _ in order_with_prior(hits, [0.95, 0.66, 0.5], prior)] == [0, 1, 2]
    assert order_with_prior(hits, [0.74, 0.66, 0.5], prior)[0] == (1, 0.66)  # the reranker's score kept


def test_rerank_hits_applies_the_prior_before_the_top_k_cut() -> None:
    hits = [
        hit("qua_lieu_va_xu_tri", "Triệu chứng: nhịp tim chậm, tụt huyết áp, nhịp tim chậm nặng."),
        hit("chong_chi_dinh", "Sốc tim, nhịp tim chậm dưới 45 lần mỗi phút, blốc nhĩ thất."),
        hit("duoc_dong_hoc", "Hấp thu nhanh qua đường tiêu hóa."),
    ]
    reranker = OfflineReranker(stopwords=RULES.stopwords)
    query = "nhịp tim chậm có được dùng không"
    plain, _, applied = rerank_hits(query, hits, reranker, 1, Timings())
    assert applied and plain[0].chunk.section_key == "qua_lieu_va_xu_tri"
    prior = section_prior(query, replace(RULES, prior_weight=0.5))
    boosted, _, _ = rerank_hits(query, hits, reranker, 1, Timings(), prior=prior)
    assert [h.chunk.section_key for h in boosted] == ["chong_chi_dinh"]
    assert boosted[0].score_kind == ScoreKind.RERANK and boosted[0].score is not None
    assert boosted[0].score <= 1.0  # the reranker's score, not score + prior


def test_a_prior_never_reorders_without_a_reranker() -> None:
    hits = [hit("qua_lieu_va_xu_tri", "a"), hit("chong_chi_dinh", "b")]
    kept, state, applied = rerank_hits("x", hits, None, 2, Timings(), prior={"chong_chi_dinh": 1.0})
    assert (not applied, state) == (True, "disabled") and [h.chunk.section_key for h in kept] == [
        "qua_lieu_va_xu_tri",
        "chong_chi_dinh",
    ]


def test_label_sections_are_no_free_form_answer() -> None:
    keys = ("ten_chung_quoc_te", "ma_atc", "loai_thuoc", "chi_dinh", "than_trong", "ten_thuong_mai")
    assert answer_sections(keys, load_vocabulary()) == ("chi_dinh", "than_trong")
