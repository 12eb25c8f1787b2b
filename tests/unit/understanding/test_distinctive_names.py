"""A multi-word title named by its distinctive word alone, and typo tolerance for brands: resolved when
one drug fits, CLARIFY when several do, never a guess. A FICTIONAL catalog (not medical information)."""

from __future__ import annotations

import pytest

from rag_server.domain import Chunk, ChunkKind, SourceRef, chunk_id_for
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.understanding.catalog import Catalog, build_catalog, distinctive_words
from rag_server.understanding.frame import TurnType
from rag_server.understanding.reading import read as build_frame
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language
from rag_server.vocabulary.rules import load_rules

R = pb.DecisionReason
_V = load_vocabulary()

# drug_id -> (display name, INN line, brand list). Invented names; NOT medical information.
DRUGS: dict[str, tuple[str, str, str]] = {
    "acid-pelmirozic": ("ACID PELMIROZIC", "Pelmirozic acid.", "Pelmiro 50; Zirocap; Zirocapsula."),
    "natri-clovarat": ("NATRI CLOVARAT", "Sodium clovarate.", "Clovana."),
    "kali-clovarat": ("KALI CLOVARAT", "Potassium clovarate.", "Kaloval."),
    "natri-dravolid": ("NATRI DRAVOLID", "Sodium dravolide.", "Dravona."),
    "insulin-glavorin": ("INSULIN GLAVORIN", "Insulin glavorine.", "Glavolin."),
    "zentamin": ("ZENTAMIN", "Zentamin.", "Zentacap."),
    "zentamin-va-acid-orvulanic": ("ZENTAMIN VÀ ACID ORVULANIC", "Zentamin and orvulanic acid.", "Orvuzen."),
    "bravatol": ("BRAVATOL", "Bravatol.", "Mexolan; Khoanh."),
    "druvatol": ("DRUVATOL", "Druvatol.", "Mexolin."),
}
PROSE = "Thuốc hư cấu dùng trong kiểm thử, không phải thông tin y khoa."


def _chunk(drug_id: str, name: str, section_key: str, text: str) -> Chunk:
    return Chunk(
        chunk_id=chunk_id_for(drug_id, section_key, 0),
        drug_id=drug_id,
        drug_name=name,
        section_key=section_key,
        section_title=_V.title(section_key),
        part_index=0,
        chunk_kind=ChunkKind.PROSE,
        text=text,
        source_refs=[SourceRef(document_id="fictional0000002", physical_page=3, printed_page=1)],
    )


def chunks(drugs: dict[str, tuple[str, str, str]] = DRUGS) -> list[Chunk]:
    out: list[Chunk] = []
    for drug_id, (name, inn, brands) in drugs.items():
        out.append(_chunk(drug_id, name, "ten_chung_quoc_te", inn))
        out.append(_chunk(drug_id, name, "ten_thuong_mai", brands))
        out.append(_chunk(drug_id, name, "chong_chi_dinh", PROSE))
    return out


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(chunks(), load_language())


def ids(catalog: Catalog, question: str) -> list[tuple[str, ...]]:
    return [m.drug_ids for m in catalog.find(question)]


@pytest.mark.parametrize(
    ("question", "drug_id"),
    [
        ("pelmirozic chong chi dinh", "acid-pelmirozic"),
        ("PELMIROZIC chống chỉ định", "acid-pelmirozic"),
        ("chống chỉ định của pelmirozic?", "acid-pelmirozic"),
        ("glavorin liều dùng", "insulin-glavorin"),
        ("orvulanic chống chỉ định", "zentamin-va-acid-orvulanic"),
    ],
)
def test_a_distinctive_word_alone_names_its_drug(catalog: Catalog, question: str, drug_id: str) -> None:
    (mention,) = catalog.find(question)
    assert mention.drug_ids == (drug_id,) and mention.weak


def test_the_full_title_still_wins_and_is_not_weak(catalog: Catalog) -> None:
    (mention,) = catalog.find("acid pelmirozic chống chỉ định")
    assert (mention.drug_ids, mention.weak, mention.end - mention.start) == (("acid-pelmirozic",), False, 2)


def test_a_word_in_several_drugs_names_is_ambiguous(catalog: Catalog) -> None:
    (mention,) = catalog.find("clovarat chống chỉ định")
    assert mention.ambiguous and mention.drug_ids == ("kali-clovarat", "natri-clovarat")
    u = build_frame("clovarat chống chỉ định", catalog, load_language())
    assert (u.frame.turn_type, u.reason) == (TurnType.CLARIFY, R.DECISION_REASON_AMBIGUOUS_DRUG)
    assert u.frame.drug_ids == ("kali-clovarat", "natri-clovarat")


@pytest.mark.parametrize(
    "question", ["natri chống chỉ định", "kali liều dùng", "insulin chống chỉ định", "acid liều dùng"]
)
def test_generic_salt_and_class_words_never_name_a_drug(catalog: Catalog, question: str) -> None:
    assert catalog.find(question) == []  # "natri" would otherwise be NATRI DRAVOLID's alone


def test_a_one_word_part_of_a_combination_is_the_single_drug_not_the_combination(catalog: Catalog) -> None:
    assert ids(catalog, "zentamin chống chỉ định") == [("zentamin",)]
    without_single = {k: v for k, v in DRUGS.items() if k != "zentamin"}
    cat = build_catalog(chunks(without_single), load_language())
    assert cat.find("zentamin chống chỉ định") == []  # never silently the combination
    u = build_frame("zentamin chống chỉ định", cat, load_language())
    assert u.reason == R.DECISION_REASON_DRUG_NOT_FOUND


@pytest.mark.parametrize(
    "question",
    [
        "liều tazorcilin orvulanic",
        "tazorcilin và acid orvulanic liều dùng",
        "orvulanic tazorcilin chống chỉ định",
    ],
)
def test_a_distinctive_word_beside_an_unknown_drug_name_is_dropped(catalog: Catalog, question: str) -> None:
    assert catalog.find(question) == []
    assert build_frame(question, catalog, load_language()).reason == R.DECISION_REASON_DRUG_NOT_FOUND


def test_an_ambiguous_word_beside_a_drug_named_in_full_is_ignored(catalog: Catalog) -> None:
    assert ids(catalog, "bravatol có chứa clovarat không") == [("bravatol",)]
    assert ids(catalog, "bravatol và pelmirozic có tương tác không") == [("bravatol",), ("acid-pelmirozic",)]


def test_names_of_includes_a_word_only_when_it_names_that_drug_alone(catalog: Catalog) -> None:
    def single_words(drug_id: str) -> set[str]:
        return {p.folded[0] for p in catalog.names_of(drug_id) if len(p) == 1}

    assert "pelmirozic" in single_words("acid-pelmirozic")
    assert "clovarat" not in single_words("natri-clovarat")  # ambiguous: names neither drug alone
    assert "orvulanic" in single_words("zentamin-va-acid-orvulanic")
    assert "zentamin" not in single_words("zentamin-va-acid-orvulanic")


@pytest.mark.parametrize(
    ("title", "words"),
    [
        ("ACID PELMIROZIC", ["pelmirozic"]),
        ("NATRI CLORID", []),
        ("VITAMIN A", []),
        ("INSULIN GLARGIN", ["glargin"]),
        ("ZENTAMIN", []),  # one word: a name already
        ("THAN HOẠT TÍNH", []),  # Vietnamese syllables
        # a combination: never its one-word part, only the distinctive word of a multi-word part
        ("AMOXICILIN VÀ KALI CLAVULANAT", ["clavulanat"]),
        ("AMOXICILIN + ACID CLAVULANIC", ["clavulanic"]),
        ("Amoxicillin/clavulanic acid", ["clavulanic"]),
        ("Sulfamethoxazol và trimethoprim", []),
    ],
)
def test_distinctive_words(title: str, words: list[str]) -> None:
    rules = load_rules()
    conj = [c.folded for c in rules.name_conjunctions]
    assert [w for w, _ in distinctive_words(title, rules.generic_name_words, conj)] == words


# --- typo tolerance -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "drug_id"),
    [("pelmirozc", "acid-pelmirozic"), ("zirocapp", "acid-pelmirozic"), ("Glavolim", "insulin-glavorin")],
)
def test_brand_and_distinctive_word_typos_within_bounds(catalog: Catalog, typed: str, drug_id: str) -> None:
    (mention,) = catalog.find(f"{typed} chống chỉ định")
    assert mention.drug_ids == (drug_id,) and mention.distance == 1


def test_a_brand_typo_as_close_to_two_drugs_brands_is_ambiguous(catalog: Catalog) -> None:
    (mention,) = catalog.find("mexolen liều dùng")  # one edit from Mexolan (bravatol) and Mexolin (druvatol)
    assert mention.ambiguous and set(mention.drug_ids) == {"bravatol", "druvatol"}
    u = build_frame("mexolen liều dùng", catalog, load_language())
    assert (u.frame.turn_type, u.reason) == (TurnType.CLARIFY, R.DECISION_REASON_AMBIGUOUS_DRUG)


@pytest.mark.parametrize("typed", ["zirocappp", "mxolann", "glvolim", "ziroapsla"])
def test_brand_typos_beyond_bounds_are_rejected(catalog: Catalog, typed: str) -> None:
    # 2 edits: beyond the bound of a name under 9 letters, and of any brand (brands allow 1 edit)
    assert catalog.find(f"liều {typed}") == []


def test_long_titles_and_words_allow_two_edits_brands_one(catalog: Catalog) -> None:
    assert ids(catalog, "liều pelmirzc") == [("acid-pelmirozic",)]  # 10-letter word, 2 edits
    assert ids(catalog, "liều zirocapsla") == [("acid-pelmirozic",)]  # 11-letter brand, 1 edit


def test_a_vietnamese_word_is_never_read_as_a_misspelt_brand(catalog: Catalog) -> None:
    assert ids(catalog, "khoanh liều dùng") == [("bravatol",)]  # the brand, typed exactly
    assert catalog.find("khoan liều dùng") == []  # one edit away, but an ordinary syllable


def test_exact_names_beat_typos(catalog: Catalog) -> None:
    assert ids(catalog, "bravatol và mexolen") == [("bravatol",)]  # fuzzy only when nothing is exact
