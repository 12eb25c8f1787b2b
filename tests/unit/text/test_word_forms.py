"""`Phrases.found_in(word_forms(text))` (the evidence gate's cheap path) agrees with tokenize + find_any on
any text, and the table-driven fold agrees with its definition. Fictional words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_server.text.match import Phrases, find_any, phrase, tokenize, word_forms
from rag_server.text.normalize import _fold_slow, fold

WORDS = ["gan", "gần", "gân", "thận", "than", "suy", "sữa", "sua", "mẹ", "me", "zentavir", ",", ".", "-", "(",
         "Đau", "đầu", "dau", "dau", "ĐAU", "ǅ", "ß", "a\u0301", "x"]
TERMS = Phrases(phrase(t) for t in ("suy gan", "thận", "sữa mẹ", "dau dau", "đau đầu", "zentavir"))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=14), st.sampled_from([" ", "", "  ", "\n"]))
def test_found_in_agrees_with_find_any(words: list[str], sep: str) -> None:
    text = sep.join(words) if sep else " ".join(words)
    toks = tokenize(text)
    plain = all(t.loose for t in toks) if toks else True
    assert TERMS.found_in(word_forms(text), loose=plain) == bool(find_any(toks, TERMS))
    assert [(t.raw, t.folded) for t in toks] == word_forms(text)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=24))
def test_fold_equals_its_definition(text: str) -> None:
    assert fold(text) == _fold_slow(text)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_count_tokens_equals_its_definition(text: str) -> None:
    from rag_server.text.tokens import count_tokens, count_tokens_slow

    assert count_tokens(text) == count_tokens_slow(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aăâbđếệyỷ_19 \t\n.,;:/()-\u00a0\u0301", max_size=300))
def test_count_tokens_equals_its_definition_on_long_vietnamese_words(text: str) -> None:
    from rag_server.text.tokens import count_tokens, count_tokens_slow

    assert count_tokens(text) == count_tokens_slow(text)
