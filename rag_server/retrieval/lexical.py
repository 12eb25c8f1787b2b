"""Lexical helpers shared by the routes: matched-term counts, anchors.

The pooling gate counts *distinct matched content terms* of the question (the seed's lexical score:
no term frequency, no IDF), on folded word tokens, stopwords (rules.toml) excluded.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.text.match import Phrase, Tok, find, tokenize, words


def matched_terms(terms: Sequence[str], text: str) -> int:
    """How many distinct terms occur as words in text (folded)."""
    present = {t.folded for t in tokenize(text)}
    return sum(1 for term in set(terms) if term in present)


def anchor_matches(text_toks: Sequence[Tok], anchors: Sequence[Phrase]) -> list[Phrase]:
    """The anchors that occur in the text (word-boundary exact, accent-compatible)."""
    ws = words(text_toks)
    return [a for a in anchors if find(ws, a)]
