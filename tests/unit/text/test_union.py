"""`union`: the patterns of several vocabulary sets as one indexed Phrases, built once per combination."""

from __future__ import annotations

from rag_server.text.match import Phrases, find_any, phrase, tokenize, union


def test_a_union_is_built_once_and_matches_what_its_sets_match() -> None:
    a = Phrases((phrase("đau đầu"), phrase("buồn nôn")))
    b = Phrases((phrase("chóng mặt"),))
    first = union(a, b)
    assert union(a, b) is first  # the same sets: the same (already indexed) Phrases
    assert union(b, a) is not first  # another combination
    toks = tokenize("uống thuốc bị đau đầu và chóng mặt")
    assert [p.text for _, p in find_any(toks, first)] == ["đau đầu", "chóng mặt"]


def test_an_equal_but_distinct_set_gets_its_own_union() -> None:
    a = Phrases((phrase("sốt"),))
    twin = Phrases((phrase("sốt"),))
    assert union(a) is not union(twin)  # keyed by identity, never by an id a dead set left behind
    assert [p.text for _, p in find_any(tokenize("bị sốt"), union(twin))] == ["sốt"]
