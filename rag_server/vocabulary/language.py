"""Language: everything the service reads questions and evidence with and writes answers in, loaded once by
the application: the section vocabulary (sections.toml), the rules of the understanding layer (rules.toml),
the clinical vocabulary (clinical.toml), the parts of situations (situation.toml), the service's own
user-facing strings (strings.toml), and the phrase and word sets derived from them (built on first use)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from rag_server.text.match import Phrases, tokenize
from rag_server.vocabulary.clinical import ClinicalVocabulary, load_clinical
from rag_server.vocabulary.rules import Rules, load_rules
from rag_server.vocabulary.sections import Vocabulary, load_vocabulary
from rag_server.vocabulary.situation import SituationVocabulary, load_situation
from rag_server.vocabulary.strings import Strings, load_strings


@dataclass(frozen=True, eq=False)
class Language:
    vocabulary: Vocabulary
    rules: Rules
    clinical: ClinicalVocabulary
    situations: SituationVocabulary
    strings: Strings

    @cached_property
    def term_vocabulary(self) -> Phrases:
        """What an asked term may be as one phrase: the clinical term groups, medical terms, condition
        names and synonyms, class names, patient conditions."""
        return Phrases(dict.fromkeys([*self.clinical.term_forms, *self.medical_signal]))

    @cached_property
    def medical_signal(self) -> Phrases:
        """What makes a question medical: clinical terms, condition names and synonyms, class names, and
        the patient conditions of the rules."""
        return Phrases(dict.fromkeys([
            *self.clinical.medical_terms, *self.clinical.condition_forms, *self.clinical.class_aliases,
            *(p for c in self.rules.conditions for p in c.detect),
        ]))

    @cached_property
    def fillers(self) -> Phrases:
        """Generic words and stopwords, with their accents."""
        return Phrases(dict.fromkeys([*self.clinical.generic, *self.rules.stopword_phrases]))

    @cached_property
    def known_words(self) -> frozenset[str]:
        """Folded words of the section vocabulary (phrases and hints), of rules.toml and of the generic
        words: never an unknown drug name."""
        texts = [
            t
            for spec in self.vocabulary.sections.values()
            for t in (spec.title, *spec.aliases, *spec.phrases, *spec.hints)
        ]
        words = frozenset(tok.folded for text in texts for tok in tokenize(text))
        return words | self.rules.words() | self.clinical.generic_words


def load_language() -> Language:
    """The bundled vocabularies (each loader caches its parsed file)."""
    return Language(load_vocabulary(), load_rules(), load_clinical(), load_situation(), load_strings())
