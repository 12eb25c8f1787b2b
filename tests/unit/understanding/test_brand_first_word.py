"""A multi-word brand ("Tylenol 8 Hour"-like) is also found by its first word: resolved when the word is in
one drug's names only, CLARIFY when in several, and an exact full brand keeps priority. A FICTIONAL catalog
(invented names) — NOT medical information."""

from __future__ import annotations

import pytest

from rag_server.domain import Chunk, ChunkKind, SourceRef, chunk_id_for
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.understanding.catalog import Catalog, brand_first_word, build_catalog
from rag_server.understanding.frame import TurnType
from rag_server.understanding.reading import read as build_frame
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language
from rag_server.vocabulary.rules import load_rules

R = pb.DecisionReason
_V = load_vocabulary()

# drug_id -> (display name, brand list). Invented names.
DRUGS: dict[str, tuple[str, str]] = {
    "zelvarin": ("ZELVARIN", "Tyrovel 8 Hour; Panorex Extra; Zelva 500."),
    "zelvarin-va-cofradin": ("ZELVARIN VÀ COFRADIN", "Panorex Extra Cofra; Bravux Night."),
    "miloxan": ("MILOXAN", "Bravux Day; Quintor."),
    "quintorin": ("QUINTORIN", "Quintor Retard 20; Sanova Gel."),
    "drosal": ("DROSAL", "Thuốc Ho Drosal; Kids Drosal; Sanova."),
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
        source_refs=[SourceRef(document_id="fictional0000003", physical_page=3, printed_page=1)],
    )


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    out: list[Chunk] = []
    for drug_id, (name, brands) in DRUGS.items():
        out.append(_chunk(drug_id, name, "ten_thuong_mai", brands))
        out.append(_chunk(drug_id, name, "chong_chi_dinh", PROSE))
    return build_catalog(out, load_language())


def found(catalog: Catalog, question: str) -> list[tuple[str, ...]]:
    return [m.drug_ids for m in catalog.find(question)]


@pytest.mark.parametrize("question", ["Tyrovel chống chỉ định", "tyrovel liều dùng", "liều của TYROVEL?"])
def test_a_first_word_in_one_drugs_names_finds_it(catalog: Catalog, question: str) -> None:
    assert found(catalog, question) == [("zelvarin",)]
    u = build_frame(question, catalog, load_language())
    assert u.frame.drug_ids == ("zelvarin",) and u.frame.turn_type == TurnType.SECTION_QUESTION


def test_the_first_word_is_a_weak_match_not_a_full_name(catalog: Catalog) -> None:
    (mention,) = catalog.find("tyrovel chống chỉ định")
    assert mention.weak and mention.distance == 0


@pytest.mark.parametrize(
    ("question", "drug_ids"),
    [
        ("panorex chống chỉ định", ("zelvarin", "zelvarin-va-cofradin")),  # Panorex Extra / Extra Cofra
        ("bravux liều dùng", ("miloxan", "zelvarin-va-cofradin")),  # Bravux Night / Bravux Day
    ],
)
def test_a_first_word_of_several_drugs_brands_is_ambiguous(
    catalog: Catalog, question: str, drug_ids: tuple[str, ...]
) -> None:
    (mention,) = catalog.find(question)
    assert mention.drug_ids == drug_ids
    u = build_frame(question, catalog, load_language())
    assert (u.frame.turn_type, u.reason) == (TurnType.CLARIFY, R.DECISION_REASON_AMBIGUOUS_DRUG)


def test_exact_full_brands_keep_priority(catalog: Catalog) -> None:
    # "Quintor" is a whole brand of miloxan and the first word of quintorin's "Quintor Retard 20"
    assert found(catalog, "quintor chống chỉ định") == [("miloxan",)]
    # the whole multi-word brand still names its own drug (longest name first)
    assert found(catalog, "quintor retard 20 chống chỉ định") == [("quintorin",)]
    assert found(catalog, "panorex extra cofra liều dùng") == [("zelvarin-va-cofradin",)]
    assert found(catalog, "panorex extra liều dùng") == [("zelvarin",)]
    # "Sanova" is a whole brand of drosal and the first word of quintorin's "Sanova Gel"
    assert found(catalog, "sanova liều dùng") == [("drosal",)]


def test_first_words_are_never_typo_matched(catalog: Catalog) -> None:
    assert catalog.find("tyrovol chống chỉ định") == []  # one edit from the first word only


def test_names_of_includes_a_first_word_only_when_it_names_that_drug_alone(catalog: Catalog) -> None:
    def single_words(drug_id: str) -> set[str]:
        return {p.folded[0] for p in catalog.names_of(drug_id) if len(p) == 1}

    assert "tyrovel" in single_words("zelvarin")
    assert "panorex" not in single_words("zelvarin")


@pytest.mark.parametrize(
    ("brand", "word"),
    [
        ("Tyrovel 8 Hour", "tyrovel"),
        ("Panorex Extra", "panorex"),
        ("Zelva", None),  # one word: a name already
        ("Zel 500 mg", None),  # fewer than 4 letters
        ("Thuốc Ho Drosal", None),  # a Vietnamese syllable
        ("thuoc ho drosal", None),
        ("Kids Drosal", None),  # a strength/form word
        ("Natri Zelvarin", None),  # a generic salt word (rules.toml [names])
        ("Forte Zelva", None),
    ],
)
def test_brand_first_word_rules(brand: str, word: str | None) -> None:
    rules = load_rules()
    got = brand_first_word(brand, rules.generic_name_words)
    assert (got[0] if got else None) == word


def test_an_everyday_english_word_is_no_brands_first_letters() -> None:
    """"a mild rash": "mild" begins the brand "Mildovex", but it is an English word, no drug's prefix; the
    brand's own first letters still name it."""
    chunks = [
        _chunk("amlovex", "AMLOVEX", "ten_thuong_mai", "Mildovex 5; Amlo Plus."),
        _chunk("amlovex", "AMLOVEX", "chong_chi_dinh", PROSE),
        _chunk("zelvarin", "ZELVARIN", "ten_thuong_mai", "Tyrovel 8 Hour."),
        _chunk("zelvarin", "ZELVARIN", "chong_chi_dinh", PROSE),
    ]
    catalog = build_catalog(chunks, load_language())
    assert found(catalog, "after a mild zelvarin rash, can it be restarted at a low dose?") == [("zelvarin",)]
    assert found(catalog, "mildov dose for adults") == [("amlovex",)]
