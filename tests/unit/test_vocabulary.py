"""The section vocabulary: question phrases (longest wins, no guess) and printed headings (OCR slips)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_server.vocabulary import Vocabulary, load_vocabulary
from rag_server.vocabulary.sections import folded_title_key


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return load_vocabulary()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # "chỉ định" is inside "chống chỉ định": the longer phrase must win, they mean opposite things.
        ("chống chỉ định của thuốc này là gì", "chong_chi_dinh"),
        ("CHONG CHI DINH cua thuoc nay", "chong_chi_dinh"),
        ("thuốc này có chỉ định gì", "chi_dinh"),
        # "quá liều" must not be read as "liều".
        ("uống quá liều thì xử trí sao", "qua_lieu_va_xu_tri"),
        ("liều dùng cho trẻ em", "lieu_luong_va_cach_dung"),
        ("dùng cho phụ nữ thời kỳ cho con bú được không", "thoi_ky_cho_con_bu"),
        ("tương tác thuốc với warfarin", "tuong_tac_thuoc"),
    ],
)
def test_longest_phrase_wins(vocab: Vocabulary, question: str, expected: str) -> None:
    match = vocab.resolve_section(question)
    assert match is not None
    assert match.section_key == expected


@pytest.mark.parametrize("question", ["xin chào", "thuốc này giá bao nhiêu tiền", "", "chỉđịnh"])
def test_no_match_is_none_not_a_guess(vocab: Vocabulary, question: str) -> None:
    assert vocab.resolve_section(question) is None


def test_phrase_match_is_word_boundary_exact(vocab: Vocabulary) -> None:
    # "lieu" inside another word is not the phrase "liều".
    assert vocab.resolve_section("tieulieuxyz") is None


def test_section_cues_use_the_shared_matcher_word_by_word(vocab: Vocabulary) -> None:
    match = vocab.resolve_section("chống chỉ định của zentavir")
    assert match is not None and (match.section_key, match.position) == ("chong_chi_dinh", 0)
    # a word typed without diacritics matches in a question typed with them elsewhere ...
    mixed = vocab.resolve_section("zentavir chong chỉ định gì")
    assert mixed is not None and mixed.section_key == "chong_chi_dinh"
    # ... but a word typed with them must match them, and a phrase never spans punctuation
    plain = vocab.resolve_section("co che gi")
    assert plain is not None and plain.section_key == "duoc_ly_va_co_che_tac_dung"
    assert vocab.resolve_section("có che gì") is None
    assert vocab.resolve_section("chống chỉ, định") is None


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Chỉ định", "chi_dinh"),
        ("CHỐNG CHỈ ĐỊNH:", "chong_chi_dinh"),
        ("**Thận trọng**", "than_trong"),
        # OCR slips handled by the heading normaliser (not listed as aliases).
        ("Ouá liều và cách xử trí", "qua_lieu_va_xu_tri"),
        ("Thoi ki mang thai", "thoi_ky_mang_thai"),
        # U+00D0 (Ð) look-alike of Đ.
        ("\u00d0ộ ổn định và bảo quản", "do_on_dinh_va_bao_quan"),
        ("Tác dụng không mong muốn (ADR)", "tac_dung_khong_mong_muon"),
    ],
)
def test_heading_key_tolerates_case_accents_and_ocr_slips(
    vocab: Vocabulary, heading: str, expected: str
) -> None:
    assert vocab.heading_key(heading) == expected


@pytest.mark.parametrize("heading", ["Chỉ", "Cách dùng thuốc cho chó", "Ghi chú"])
def test_unknown_heading_is_none(vocab: Vocabulary, heading: str) -> None:
    assert vocab.heading_key(heading) is None


def test_keys_are_folded_titles(vocab: Vocabulary) -> None:
    for key, spec in vocab.sections.items():
        # A parenthesised abbreviation ("(ADR)") is not part of the key.
        title = re.sub(r"\s*\([^)]*\)", "", spec.title)
        assert key == folded_title_key(title), f"{key!r} is not the folded title {spec.title!r}"


def test_keys_follow_book_order(vocab: Vocabulary) -> None:
    orders = [vocab.order(k) for k in vocab.keys]
    assert orders == sorted(orders)
    assert vocab.keys[0] == "ten_chung_quoc_te"
    assert vocab.order("no_such_section") > max(orders)


def test_intro_and_identity_sections_are_declared(vocab: Vocabulary) -> None:
    assert set(vocab.intro_sections) == {
        "ten_chung_quoc_te",
        "loai_thuoc",
        "chi_dinh",
        "duoc_ly_va_co_che_tac_dung",
    }
    assert set(vocab.identity_sections) <= set(vocab.sections)
    assert set(vocab.intro_sections) <= set(vocab.sections)


def test_undeclared_intro_section_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "sections.toml"
    path.write_text(
        'intro_sections = ["chi_dinh", "nope"]\n[[section]]\nkey = "chi_dinh"\ntitle = "Chỉ định"\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="nope"):
        load_vocabulary(path)


def test_every_role_names_a_declared_section(tmp_path: Path) -> None:
    text = resources_text().replace('indication = "chi_dinh"', 'indication = "chi_dinh_nope"')
    path = tmp_path / "sections.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="chi_dinh_nope"):
        load_vocabulary(path)
    roles = load_vocabulary().roles
    assert roles.indication == "chi_dinh" and "than_trong" in roles.warning_facet


def resources_text() -> str:
    from importlib import resources

    return resources.files("rag_server.vocabulary").joinpath("sections.toml").read_text("utf-8")


def test_duplicate_or_unfolded_key_is_rejected(tmp_path: Path) -> None:
    dup = tmp_path / "dup.toml"
    dup.write_text(
        '[[section]]\nkey = "chi_dinh"\ntitle = "Chỉ định"\n[[section]]\nkey = "chi_dinh"\ntitle = "X"\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="chi_dinh"):
        load_vocabulary(dup)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[section]]\nkey = "Chi Dinh"\ntitle = "Chỉ định"\n', encoding="utf-8")
    with pytest.raises(ValueError):
        load_vocabulary(bad)
