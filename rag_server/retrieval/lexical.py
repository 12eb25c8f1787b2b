"""Lexical helpers shared by the routes: content terms of a question, matched-term counts, anchors.

The pooling gate counts *distinct matched content terms* of the question (the seed's lexical score:
no term frequency, no IDF), on folded word tokens, stopwords (rules.toml) excluded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag_server.text.match import Phrase, Tok, find, find_any, tokenize, words


def content_terms(toks: Sequence[Tok], stopwords: frozenset[str], drop: Iterable[Phrase] = ()) -> list[str]:
    """Distinct folded words of the question that carry content (minus `drop` phrases and stopwords)."""
    ws = words(toks)
    spans = find_any(ws, list(drop))
    dropped = {j for i, p in spans for j in range(i, i + len(p))}
    out: list[str] = []
    for i, t in enumerate(ws):
        if i in dropped or t.folded in stopwords or len(t.folded) < 2 or t.folded.isdigit():
            continue
        if t.folded not in out:
            out.append(t.folded)
    return out


def matched_terms(terms: Sequence[str], text: str) -> int:
    """How many distinct terms occur as words in text (folded)."""
    present = {t.folded for t in tokenize(text)}
    return sum(1 for term in set(terms) if term in present)


def anchor_matches(text_toks: Sequence[Tok], anchors: Sequence[Phrase]) -> list[Phrase]:
    """The anchors that occur in the text (word-boundary exact, accent-compatible)."""
    ws = words(text_toks)
    return [a for a in anchors if find(ws, a)]
