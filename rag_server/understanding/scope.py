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

from collections.abc import Callable, Sequence

from rag_server.text.match import Phrase, Phrases, Tok, find_any, words
from rag_server.understanding.rules import Rules
from rag_server.vocabulary.clinical import ClinicalVocabulary


def looks_non_human(toks: Sequence[Tok], rules: Rules) -> bool:
    """Veterinary subjects. Typed without diacritics a one-word term is ambiguous ("cho" is "for" as
    much as "chó"), so only multi-word terms count then."""
    if find_any(toks, rules.human_context):
        return False
    loose = any(t.loose for t in toks)
    return any(len(p) > 1 or not loose for _, p in find_any(toks, rules.non_human))


_DERIVED: dict[tuple[str, int, int], Phrases] = {}  # (what, id(clinical), id(rules)): built once


def _derived(what: str, clinical: ClinicalVocabulary, rules: Rules, build: Callable[[], Phrases]) -> Phrases:
    """Phrase sets derived from two vocabularies, built once per pair (keyed by identity: hashing the
    vocabularies themselves would cost more than the lookups)."""
    key = (what, id(clinical), id(rules))
    found = _DERIVED.get(key)
    if found is None:
        found = _DERIVED[key] = build()
    return found


def _signal(clinical: ClinicalVocabulary, rules: Rules) -> Phrases:
    return _derived("signal", clinical, rules, lambda: Phrases(dict.fromkeys([
        *clinical.medical_terms, *clinical.condition_forms, *clinical.class_aliases,
        *(p for c in rules.conditions for p in c.detect),
    ])))


def medical_terms(toks: Sequence[Tok], clinical: ClinicalVocabulary, rules: Rules) -> list[Phrase]:
    """The medical words of a question, longest first, non-overlapping, in text order."""
    loose = any(t.loose for t in toks)
    return [p for _, p in find_any(toks, _signal(clinical, rules)) if len(p) > 1 or not loose]


def only_generic(toks: Sequence[Tok], clinical: ClinicalVocabulary, rules: Rules) -> bool:
    """True when nothing but generic words, stopwords, numbers and symbols is left."""
    return not content_words(toks, clinical, rules)


def content_words(toks: Sequence[Tok], clinical: ClinicalVocabulary, rules: Rules) -> list[Tok]:
    """The words of a text that are neither generic words, nor stopwords (accent-compatible: "vảy" is no
    "vậy"), nor numbers and symbols."""
    ws = words(toks)
    covered = {j for i, p in find_any(ws, filler_phrases(clinical, rules)) for j in range(i, i + len(p))}
    return [t for i, t in enumerate(ws) if i not in covered and any(ch.isalpha() for ch in t.folded)]


def filler_phrases(clinical: ClinicalVocabulary, rules: Rules) -> Phrases:
    """Generic words and stopwords (with their accents)."""
    return _derived("fillers", clinical, rules,
                    lambda: Phrases(dict.fromkeys([*clinical.generic, *rules.stopword_phrases])))
