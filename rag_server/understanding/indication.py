"""An indication lookup phrased as a question ("thuốc nào điều trị tăng huyết áp"): the {x} of the longest
matching template of rules.toml [indication], its filler words stripped."""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.text.match import Phrase, Tok, find, match_at, text_of, tokenize, words
from rag_server.vocabulary.rules import Rules, Template


def _strip_ends(toks: list[Tok], rules: Rules) -> list[Tok]:
    changed = True
    while toks and changed:
        changed = False
        while toks and toks[0].is_punct:
            toks, changed = toks[1:], True
        while toks and toks[-1].is_punct:
            toks, changed = toks[:-1], True
        for p in sorted(rules.leading_fillers, key=lambda p: -len(p)):
            if len(toks) > len(p) and match_at(toks, 0, p):
                toks, changed = toks[len(p) :], True
                break
        for p in sorted(rules.trailing_fillers, key=lambda p: -len(p)):
            if len(toks) > len(p) and match_at(toks, len(toks) - len(p), p):
                toks, changed = toks[: len(toks) - len(p)], True
                break
    return toks


def extract_indication(toks: Sequence[Tok], rules: Rules) -> str:
    """The {x} of the longest matching indication template, or ""."""
    where: dict[str, list[int]] = {}
    for i, tok in enumerate(toks):
        where.setdefault(tok.folded, []).append(i)
    for tpl in rules.templates:
        slot = _match_template(toks, tpl, where)
        if slot is None:
            continue
        cleaned = _strip_ends(list(slot), rules)
        text = text_of(cleaned)
        if text:
            return text
    return ""


def _find(toks: Sequence[Tok], pat: Phrase, where: dict[str, list[int]]) -> list[int]:
    """find() through a question's word positions (one dict lookup instead of a scan per template)."""
    if not len(pat):
        return []
    return find(toks, pat, starts=where.get(pat.folded[0], ()))


def _match_template(toks: Sequence[Tok], tpl: Template, where: dict[str, list[int]]) -> Sequence[Tok] | None:
    if len(tpl.before):
        for i in _find(toks, tpl.before, where):
            start = i + len(tpl.before)
            if len(tpl.after):
                ends = [j for j in _find(toks, tpl.after, where) if j > start]
                if ends:
                    return toks[start : ends[0]]
            else:
                return _clause(toks[start:])
        return None
    ends = _find(toks, tpl.after, where)
    if not ends:
        return None
    head = toks[: ends[0]]
    cut = max((i for i, t in enumerate(head) if t.raw in {"?", "!", ";"}), default=-1)
    return head[cut + 1 :]


def _clause(toks: Sequence[Tok]) -> Sequence[Tok]:
    """Up to the end of the sentence ("." is not an end: "H. pylori")."""
    for i, t in enumerate(toks):
        if t.raw in {"?", "!", ";"}:
            return toks[:i]
    return toks


def strip_indication_head(text: str, rules: Rules) -> str:
    """ "bệnh gút mạn" -> "gút mạn" (a generic head word goes when two or more words remain)."""
    toks = words(tokenize(text))
    for head in rules.generic_heads:
        if len(toks) - len(head) >= 2 and match_at(toks, 0, head):
            return text_of(toks[len(head) :])
    return text_of(toks)
