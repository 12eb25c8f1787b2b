"""One text toolkit: rag_server/text holds the one tokenizer (text.match.tokenize, and folded_words over it),
the one normalisation (text.normalize: nfc, nfkc, normalised/canonical, fold), the one phrase matcher
(text.match.find / match_at / Phrases) and the one edit distance (text.spelling.osa_distance); nothing else
in rag_server/ or ingest/ defines its own. Checked on the sources (AST), then on what the tools do."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_server.text.match import find, folded_words, phrase, tokenize, word_forms
from rag_server.text.normalize import canonical, fold, normalised
from rag_server.text.spelling import osa_distance

ROOT = Path(__file__).resolve().parents[3]
TEXT = ROOT / "rag_server" / "text"


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    """Every Python source of rag_server/ and ingest/ (generated code and test fixtures left out)."""
    for base in (ROOT / "rag_server", ROOT / "ingest"):
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "gen" in parts or "fixtures" in parts:
                continue
            yield path, ast.parse(path.read_text("utf-8"))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


def _defs(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _calls(tree: ast.Module, owner: str, attribute: str) -> Iterator[ast.Call]:
    """Calls of `owner.attribute(...)` (owner "" matches any receiver)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        receiver = node.func.value
        named = isinstance(receiver, ast.Name) and receiver.id == owner
        if node.func.attr == attribute and (not owner or named):
            yield node


def test_unicode_normalisation_and_case_folding_only_in_text_normalize() -> None:
    offenders = [
        _where(path, call)
        for path, tree in _sources()
        if path != TEXT / "normalize.py"
        for call in (*_calls(tree, "unicodedata", "normalize"), *_calls(tree, "", "casefold"))
    ]
    assert offenders == [], "normalise through rag_server.text.normalize (nfc, nfkc, canonical, fold)"


FOLD_NAMES = re.compile(r"^_?(fold|fold_[a-z_]+|normali[sz]e[ds]?|strip_accents|remove_accents|deaccent)$")


def test_one_fold_and_one_normaliser() -> None:
    offenders = [
        _where(path, node)
        for path, tree in _sources()
        if path != TEXT / "normalize.py"
        for node in _defs(tree)
        if FOLD_NAMES.match(node.name)
    ]
    assert offenders == []
    normalize = ast.parse((TEXT / "normalize.py").read_text("utf-8"))
    names = [node.name for node in _defs(normalize)]
    assert names.count("fold") == 1 and names.count("normalised") == 1 and names.count("canonical") == 1


DISTANCE_NAMES = re.compile(r"(levenshtein|damerau|(^|_)osa(_|$)|edit_distance|^_?distance$)")


def test_one_edit_distance() -> None:
    found = [
        _where(path, node)
        for path, tree in _sources()
        for node in _defs(tree)
        if DISTANCE_NAMES.search(node.name)
    ]
    assert found == [f"rag_server/text/spelling.py:{_line(TEXT / 'spelling.py', 'osa_distance')}"]


TOKENIZER_NAMES = re.compile(r"^(_?tokeni[sz]e|tokens|word_tokens|_?words_of_text)$")
# the word patterns a home-made tokenizer compiles
WORD_PATTERNS = {r"\w+", r"[^\W_]+", r"[0-9a-z]+", r"[a-z0-9]+", r"[^\W\d_]+"}


def test_one_tokenizer() -> None:
    defs = [
        _where(path, node)
        for path, tree in _sources()
        for node in _defs(tree)
        if TOKENIZER_NAMES.match(node.name) and path != TEXT / "match.py"
    ]
    assert defs == []
    patterns = [
        _where(path, call)
        for path, tree in _sources()
        if path.parent != TEXT
        for call in _calls(tree, "re", "compile")
        if call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value in WORD_PATTERNS
    ]
    assert patterns == [], "read words with rag_server.text.match (tokenize, folded_words)"


MATCHER_NAMES = re.compile(r"(phrase_hits?|syllable_hits?|match_at|find_phrase|find_any|^compatible$)")


def test_one_phrase_matcher() -> None:
    defs = [
        _where(path, node)
        for path, tree in _sources()
        if path != TEXT / "match.py"
        for node in _defs(tree)
        if MATCHER_NAMES.search(node.name)
    ]
    assert defs == []
    # the accent rule of one token is the matcher's own business: nobody outside text/ applies it by hand
    by_hand = [
        _where(path, node)
        for path, tree in _sources()
        if path.parent != TEXT
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "compatible"
    ]
    assert by_hand == []


def _line(path: Path, name: str) -> int:
    tree = ast.parse(path.read_text("utf-8"))
    return next(node.lineno for node in _defs(tree) if node.name == name)


# ------------------------------------------------------------------------------------------ behaviour
def test_folded_words_are_the_words_of_tokenize() -> None:
    text = "Chống chỉ định: suy gan (nặng), ĐAU ĐẦU; ﬁlm ｐａｒａ"
    assert folded_words(text) == [t.folded for t in tokenize(text) if not t.is_punct]
    assert folded_words("Chống chỉ định:") == ["chong", "chi", "dinh"]
    assert folded_words(text) == [f for raw, f in word_forms(text) if raw not in ",.;:?!/+()"]


def test_token_offsets_are_offsets_in_the_text_itself() -> None:
    text = "Sốt… đau đầu ﬁlm ½ e\u0302\u0301 x"
    toks = tokenize(text)
    assert [text[t.start:t.end] for t in toks if not t.is_punct] == ["Sốt", "đau", "đầu", "ﬁlm", "½", "½",
                                                                     "e\u0302\u0301", "x"]
    assert [t.raw for t in toks if not t.is_punct] == ["sốt", "đau", "đầu", "film", "1", "2", "ế", "x"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aăâeêđĐ ,.…ﬁ½º\u0301\u0302xyzĐẦU")), max_size=30))
def test_token_offsets_hold_their_token(text: str) -> None:
    for tok in tokenize(text):
        assert 0 <= tok.start < tok.end <= len(text)
        assert tok.folded in [t.folded for t in tokenize(text[tok.start:tok.end])]


def test_the_phrase_matcher_reads_accents_by_the_text_or_by_the_pattern() -> None:
    toks = tokenize("Buồn nôn, đau đầu")
    assert find(toks, phrase("buon non")) == []  # the text carries diacritics: they must match...
    assert find(toks, phrase("buon non"), typed=True) == [0]  # ...unless the pattern decides: it has none
    assert find(toks, phrase("buồn ngủ"), typed=True) == []  # a pattern with diacritics must match them
    plain = tokenize("buon non dau dau")
    assert find(plain, phrase("buồn nôn")) == [0]  # a text typed without diacritics matches loosely
    assert find(plain, phrase("buồn nôn"), typed=True) == []  # unless the pattern's typing decides
    assert find(plain, phrase("dau dau"), starts=[0, 2]) == [2]


def test_the_one_edit_distance() -> None:
    assert osa_distance("abcd", "abdc") == 1
    assert osa_distance("abcdef", "azcdxf", bound=1) == 2
    assert osa_distance("amoxicilin", "amoxicillin") == 1


def test_the_one_normalisation() -> None:
    assert canonical("  Đau\u00a0 ĐẦU\n") == "đau đầu"
    assert canonical("đa\u0300u") == canonical("đàu")
    text, where = normalised(" A  b")
    assert text == "a b" and where == (1, 4, 4)  # a space stands where the next word starts
    assert fold("Chống chỉ định") == "chong chi dinh"
