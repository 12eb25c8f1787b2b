"""Is a question medical at all? Scope guards that run before anything is searched.

* `looks_non_human`: veterinary / agricultural subjects (rules.toml [scope]).
* `medical_terms`: the medical words of a question (clinical.toml: medical terms, condition names and
  synonyms, drug class names; rules.toml: patient conditions). Typed without diacritics, a one-word term
  is ambiguous ("ban" may be "bạn") and does not count.
* `only_generic`: the question's words are all generic ("thuốc", "người lớn", "trẻ em"), stopwords,
  numbers or symbols: it names nothing to look up.
A question with no drug, section, condition, patient fact or medical term is never searched: it is out of
scope (or a clarification when it is only generic words) — "no match is not a guess".
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.text.match import Phrase, Tok, find_any, words
from rag_server.vocabulary.language import Language
from rag_server.vocabulary.rules import Rules


def looks_non_human(toks: Sequence[Tok], rules: Rules) -> bool:
    """Veterinary subjects. Typed without diacritics a one-word term is ambiguous ("cho" is "for" as
    much as "chó"), so only multi-word terms count then."""
    if find_any(toks, rules.human_context):
        return False
    loose = any(t.loose for t in toks)
    return any(len(p) > 1 or not loose for _, p in find_any(toks, rules.non_human))


def medical_terms(toks: Sequence[Tok], language: Language) -> list[Phrase]:
    """The medical words of a question, longest first, non-overlapping, in text order."""
    loose = any(t.loose for t in toks)
    return [p for _, p in find_any(toks, language.medical_signal) if len(p) > 1 or not loose]


def only_generic(toks: Sequence[Tok], language: Language) -> bool:
    """True when nothing but generic words, stopwords, numbers and symbols is left."""
    return not content_words(toks, language)


def content_words(toks: Sequence[Tok], language: Language) -> list[Tok]:
    """The words of a text that are neither generic words, nor stopwords (accent-compatible: "vảy" is no
    "vậy"), nor numbers and symbols."""
    ws = words(toks)
    covered = {j for i, p in find_any(ws, language.fillers) for j in range(i, i + len(p))}
    return [t for i, t in enumerate(ws) if i not in covered and any(ch.isalpha() for ch in t.folded)]
