"""Medicines against interaction text: by name, spelling variant, bounded typo, and by class (membership
from the monograph's ATC code or Loại thuốc line, or the clinical vocabulary). FICTIONAL texts and drugs
(NOT medical information); the class names and INNs are real words so the vocabulary applies."""

from __future__ import annotations

import pytest

from rag_server.domain import Chunk, ChunkKind, MatchKind, SourceRef
from rag_server.retrieval.interactions import ChunkWords, best_chunks
from rag_server.understanding.catalog import Catalog, build_catalog
from rag_server.understanding.drug_classes import ClassIndex
from rag_server.understanding.medications import read_medications
from rag_server.vocabulary.clinical import load_clinical
from rag_server.vocabulary.language import load_language

CLINICAL = load_clinical()
RULES = CLINICAL.medication


def chunk(drug_id: str, section_key: str, text: str, part: int = 0, name: str = "") -> Chunk:
    return Chunk(
        chunk_id=f"{drug_id}__{section_key}__{part}",
        drug_id=drug_id,
        drug_name=name or drug_id.upper(),
        section_key=section_key,
        section_title=section_key,
        part_index=part,
        chunk_kind=ChunkKind.PROSE,
        text=text,
        source_refs=[SourceRef("doc", 1, 1)],
    )


INTERACTIONS = [
    chunk(
        "zorvan",
        "tuong_tac_thuoc",
        "Các thuốc chống viêm không steroid làm tăng nguy cơ chảy máu khi dùng cùng zorvan (hư cấu).",
        0,
    ),
    chunk(
        "zorvan",
        "tuong_tac_thuoc",
        "Theophylin và amiodaron làm tăng nồng độ zorvan. Lithi: tăng độc tính thần kinh (hư cấu).",
        1,
    ),
    chunk(
        "zorvan", "tuong_tac_thuoc", "Thận trọng khi phối hợp với macrolid (trừ spiramycin) và các statin.", 2
    ),
]
OTHERS = [  # monographs whose class comes from the formulary itself
    chunk("pelofen", "ma_atc", "M01AE99.", name="PELOFEN"),
    chunk("pelofen", "loai_thuoc", "Thuốc giảm đau hư cấu.", name="PELOFEN"),
    chunk("pelofen", "chi_dinh", "Đau hư cấu.", name="PELOFEN"),
    chunk("travimox", "loai_thuoc", "Kháng sinh nhóm macrolid (hư cấu).", name="TRAVIMOX"),
    chunk("travimox", "chi_dinh", "Nhiễm khuẩn hư cấu.", name="TRAVIMOX"),
]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog([*INTERACTIONS, *OTHERS], load_language())


def matches(catalog: Catalog, entry: str) -> list[tuple[str, MatchKind, str]]:
    classes = ClassIndex(CLINICAL, catalog)
    texts = [ChunkWords.of(c) for c in INTERACTIONS]
    out = []
    for med in read_medications([entry], RULES, catalog):
        for text, found in best_chunks(med, texts, catalog, classes, RULES, limit=1):
            out += [(text.chunk.chunk_id, m.kind, m.matched) for m in found]
    return out


@pytest.mark.parametrize(
    ("entry", "chunk_id", "kind"),
    [
        ("theophylin 300mg", "zorvan__tuong_tac_thuoc__1", MatchKind.EXACT),
        ("theophylline SR 300", "zorvan__tuong_tac_thuoc__1", MatchKind.VARIANT),
        ("amiodarone 200 mg (uống)", "zorvan__tuong_tac_thuoc__1", MatchKind.VARIANT),
        ("amiodaronn", "zorvan__tuong_tac_thuoc__1", MatchKind.VARIANT),  # doubled letter
        ("amiodaorn", "zorvan__tuong_tac_thuoc__1", MatchKind.TYPO),
        ("lithium carbonate 300 mg", "zorvan__tuong_tac_thuoc__1", MatchKind.VARIANT),
        ("Ibuprofen 400mg x 3 lần/ngày", "zorvan__tuong_tac_thuoc__0", MatchKind.CLASS),  # vocabulary member
        ("pelofen 10 mg", "zorvan__tuong_tac_thuoc__0", MatchKind.CLASS),  # ATC M01A from its monograph
        ("travimox", "zorvan__tuong_tac_thuoc__2", MatchKind.CLASS),  # Loại thuốc names the class
        ("simvastatin 20mg tối", "zorvan__tuong_tac_thuoc__2", MatchKind.CLASS),
        ("NSAID", "zorvan__tuong_tac_thuoc__0", MatchKind.CLASS),  # the class itself named as the medicine
    ],
)
def test_a_medicine_finds_its_chunk_and_says_how(
    catalog: Catalog, entry: str, chunk_id: str, kind: MatchKind
) -> None:
    found = matches(catalog, entry)
    assert found and found[0][0] == chunk_id, found
    assert found[0][1] == kind, found


def test_a_list_in_one_entry_finds_each_medicine(catalog: Catalog) -> None:
    found = matches(catalog, "omeprazol 20mg, theophylin 100 mg; ibuprofen")
    assert {c for c, _, _ in found} == {"zorvan__tuong_tac_thuoc__0", "zorvan__tuong_tac_thuoc__1"}


def test_an_unrelated_medicine_finds_nothing(catalog: Catalog) -> None:
    assert matches(catalog, "omeprazol 20 mg") == []
    assert matches(catalog, "paracetamol 500") == []


def test_class_evidence_says_how_membership_is_known(catalog: Catalog) -> None:
    classes = ClassIndex(CLINICAL, catalog)
    (pelofen,) = read_medications(["pelofen"], RULES, catalog)
    via = {m.drug_class.name: m.via for m in classes.classes_of(pelofen)}
    assert via["thuốc chống viêm không steroid"] == "ATC M01AE99"
    (ibuprofen,) = read_medications(["ibuprofen"], RULES, catalog)
    assert {m.via for m in classes.classes_of(ibuprofen)} == {"clinical vocabulary"}
