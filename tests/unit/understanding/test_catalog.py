"""The drug catalog: names from titles, INN and brands; accent/case-insensitive, longest name first,
bounded typo tolerance, and ambiguity returned rather than guessed. Fictional drugs only."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fictional_formulary import build_chunks

from rag_server.domain import Chunk
from rag_server.text.spelling import osa_distance
from rag_server.understanding.catalog import Catalog, build_catalog, split_display_name
from rag_server.understanding.fuzzy import max_edits
from rag_server.vocabulary import load_vocabulary
from rag_server.vocabulary.language import load_language


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return build_catalog(build_chunks(), load_language())


def ids(catalog: Catalog, question: str) -> list[tuple[str, ...]]:
    return [m.drug_ids for m in catalog.find(question)]


@pytest.mark.parametrize(
    "question",
    [
        "zentorin",
        "ZENTORIN dùng thế nào",
        "Zentoramid là gì",
        "thuốc Zento 50",
        "zentorix",
        "Zento có tốt không",
        "liều Zentorin (Zentoramid)",
    ],
)
def test_titles_inn_and_brands_resolve(catalog: Catalog, question: str) -> None:
    assert set(ids(catalog, question)) == {("zentorin",)}


def test_accents_and_case_do_not_matter_for_a_name_typed_plainly(catalog: Catalog) -> None:
    assert ids(catalog, "bao quan linh co tac dung phu gi") == [("bao-quan-linh",)]
    assert ids(catalog, "BẢO QUẢN LINH") == [("bao-quan-linh",)]


def test_word_boundaries_no_substring(catalog: Catalog) -> None:
    assert catalog.find("zentorinxyz") == []  # not a prefix match, and 3 edits away
    assert catalog.find("oxalat") == []  # 'oxa' inside a word is not the drug Oxa
    assert catalog.find("taxa nhiều") == []


def test_longest_name_wins_and_several_drugs_are_found(catalog: Catalog) -> None:
    found = catalog.find("zentorin và calvimex có tương tác không")
    assert [m.drug_ids for m in found] == [("zentorin",), ("calvimex",)]
    (brand,) = catalog.find("Zento 50 giá bao nhiêu")  # the two-word brand, not "Zento" + a number
    assert (brand.text, brand.start, brand.end) == ("zento 50", 0, 2)


def test_shared_brand_is_ambiguous_not_guessed(catalog: Catalog) -> None:
    (mention,) = catalog.find("Duomax uống lúc nào")
    assert mention.ambiguous and mention.drug_ids == ("calvimex", "zentorin")


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("metrovastn", ("metrovastin",)),  # 11 letters: 1 edit
        ("metrvastinn", ("metrovastin",)),  # 2 edits allowed for >= 9 letters
        ("zentroin", ("zentorin",)),  # transposition, 8 letters: 1 edit
        ("calvimx", ("calvimex",)),
    ],
)
def test_misspellings_within_bounds(catalog: Catalog, typed: str, expected: tuple[str, ...]) -> None:
    (mention,) = catalog.find(f"liều {typed} cho người lớn")
    assert mention.drug_ids == expected and mention.distance >= 1


@pytest.mark.parametrize(
    "typed",
    [
        "mtrvastinn",  # 3 edits from an 11-letter name
        "zntroin",  # 2 edits from an 8-letter name
        "oxb",  # 3 letters: no typo tolerance at all
        "ravln",  # 2 edits from a 7-letter name
    ],
)
def test_misspellings_beyond_bounds_are_rejected(catalog: Catalog, typed: str) -> None:
    assert catalog.find(f"liều {typed} cho người lớn") == []


def test_typo_equally_close_to_two_drugs_is_ambiguous(catalog: Catalog) -> None:
    (mention,) = catalog.find("ravoin dùng thế nào")
    assert mention.ambiguous and set(mention.drug_ids) == {"ravolin", "ravoxin"}


def test_fuzzy_only_when_no_exact_match(catalog: Catalog) -> None:
    found = catalog.find("zentorin và calvimx")
    assert [m.drug_ids for m in found] == [("zentorin",)]


def test_brands_made_of_common_words_are_ignored() -> None:
    chunks = build_chunks()
    oxa = next(c for c in chunks if c.drug_id == "oxa")
    extra: list[Chunk] = [
        replace(
            oxa,
            chunk_id="oxa__ten_thuong_mai__0",
            section_key="ten_thuong_mai",
            text="Người Lớn; Oxaplus 10.",
        ),
        replace(oxa, chunk_id="oxa__chi_dinh__1", part_index=1, text="Dùng cho người lớn."),
    ]
    cat = build_catalog([*chunks, *extra], load_language())
    assert cat.find("liều cho người lớn") == []
    assert ids(cat, "oxaplus") == [("oxa",)]
    assert ids(cat, "Oxaplus 10 dùng sao") == [("oxa",)]


def test_display_name_aliases() -> None:
    assert split_display_name("PARAXOL (Fictamol)") == ["PARAXOL (Fictamol)", "PARAXOL", "Fictamol"]


def test_catalog_lists_sections_in_book_order(catalog: Catalog) -> None:
    vocab = load_vocabulary()
    keys = catalog.drugs["zentorin"].section_keys
    assert list(keys) == sorted(keys, key=vocab.order)
    assert catalog.display_name("zentorin") == "ZENTORIN (Zentoramid)"


def test_edit_bounds() -> None:
    assert [max_edits("x" * n) for n in (4, 5, 8, 9, 15)] == [0, 1, 1, 2, 2]
    assert osa_distance("abcd", "abdc") == 1 and osa_distance("abcdef", "azcdxf", bound=1) == 2
