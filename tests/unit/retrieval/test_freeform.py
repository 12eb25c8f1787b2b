"""The free-form route's search query (names out, formulary terms in), its section prior and the prior's
effect on the reranked order. The reranker is the real offline one (lexical part, no embedder).
Fictional texts only (NOT medical information)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fictional_formulary import build_chunks

from rag_server.domain import Chunk, ChunkKind, Hit, ScoreKind, SourceRef, chunk_id_for
from rag_server.providers.rerank.breaker import BreakerState, CircuitBreaker
from rag_server.providers.rerank.guarded import GuardedReranker
from rag_server.providers.rerank.offline import OfflineReranker
from rag_server.retrieval.freeform import answer_sections, dense_text, lexical_text
from rag_server.retrieval.search import order_with_prior, rerank_hits
from rag_server.retrieval.timing import Timings
from rag_server.understanding.catalog import build_catalog
from rag_server.understanding.reading import read, section_prior
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language
from rag_server.vocabulary.rules import load_rules

RULES = load_rules()
POPULATION = load_vocabulary().roles.population
CATALOG = build_catalog(build_chunks(), load_language())


def prior_of(query: str, rules: object = RULES) -> dict[str, float]:
    from rag_server.text.match import tokenize

    return dict(section_prior(tokenize(query), rules, POPULATION))  # type: ignore[arg-type]


def search_text(query: str) -> str:
    return read(query, CATALOG, load_language()).frame.search_text


def guarded(reranker: OfflineReranker) -> GuardedReranker:
    return GuardedReranker(reranker, 1.0, CircuitBreaker(3, 30.0))


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


def test_names_are_taken_out_of_the_search_text() -> None:
    assert search_text("Nhịp tim chậm có được dùng Zento 50 không?") == "nhịp tim chậm có được dùng không"
    assert search_text("zentorin có gây buồn ngủ không") == "có gây buồn ngủ không"


def lexical(query: str) -> str:
    frame = read(query, CATALOG, load_language()).frame
    return lexical_text(frame, frame.search_text)


def test_the_lexical_query_gains_the_formulary_forms_of_its_terms_once() -> None:
    assert "phẫu thuật" in lexical("trước khi mổ phải dùng zentorin thế nào")
    assert lexical("zentorin mổ hay phẫu thuật").count("phẫu thuật") == 1  # already there
    assert "glucose máu" in lexical("zentorin bị hạ đường huyết")
    assert "phẫu thuật" not in lexical("truoc khi mo dung zentorin")  # "mo" may be "mở", "mỡ"
    assert "glucose máu" in lexical("zentorin ha duong huyet")  # several words fold
    assert "lái xe" in lexical("zentorin lai xe duoc khong")
    assert "salicylat" in lexical("zentorin dùng với aspirin có sao không")  # a class member: its class


def test_a_long_question_embeds_a_bounded_head_that_keeps_its_terms() -> None:
    long = "zentorin " + "rất dài dòng " * 120 + "có gây buồn ngủ không"  # 1,600 characters
    frame = read(long, CATALOG, load_language()).frame
    text = dense_text(frame, frame.search_text)
    assert len(text) <= 400 and "buồn ngủ" in text


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
    prior = prior_of(query)
    assert prior[favoured] == RULES.prior_weight == max(prior.values())


def test_second_sections_get_less_and_population_sections_are_demoted() -> None:
    w = RULES.prior_weight
    prior = prior_of("có được dùng không")
    assert prior["than_trong"] == pytest.approx(w / 2)
    assert prior["thoi_ky_mang_thai"] == prior["thoi_ky_cho_con_bu"] == -w
    assert prior_of("thuốc này thế nào") == {"thoi_ky_mang_thai": -w, "thoi_ky_cho_con_bu": -w}
    assert prior_of("có được dùng không", replace(RULES, prior_weight=0.0)) == {}


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
    reranker = guarded(OfflineReranker(stopwords=RULES.stopwords))
    query = "nhịp tim chậm có được dùng không"
    plain, _, applied = rerank_hits(query, hits, reranker, 1, Timings())
    assert applied and plain[0].chunk.section_key == "qua_lieu_va_xu_tri"
    prior = prior_of(query, replace(RULES, prior_weight=0.5))
    boosted, _, _ = rerank_hits(query, hits, reranker, 1, Timings(), prior=prior)
    assert [h.chunk.section_key for h in boosted] == ["chong_chi_dinh"]
    assert boosted[0].score_kind == ScoreKind.RERANK and boosted[0].score is not None
    assert boosted[0].score <= 1.0  # the reranker's score, not score + prior


def test_a_prior_never_reorders_without_a_reranker() -> None:
    hits = [hit("qua_lieu_va_xu_tri", "a"), hit("chong_chi_dinh", "b")]
    kept, state, applied = rerank_hits("x", hits, None, 2, Timings(), prior={"chong_chi_dinh": 1.0})
    assert (not applied, state) == (True, BreakerState.DISABLED) and [h.chunk.section_key for h in kept] == [
        "qua_lieu_va_xu_tri",
        "chong_chi_dinh",
    ]


def test_label_sections_are_no_free_form_answer() -> None:
    keys = ("ten_chung_quoc_te", "ma_atc", "loai_thuoc", "chi_dinh", "than_trong", "ten_thuong_mai")
    assert answer_sections(keys, load_vocabulary()) == ("chi_dinh", "than_trong")
