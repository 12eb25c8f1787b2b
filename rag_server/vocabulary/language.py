"""Language: everything the service reads questions and evidence with and writes answers in, loaded once by
the application: the section vocabulary (sections.toml), the rules of the understanding layer (rules.toml),
the clinical vocabulary (clinical.toml), the parts of situations (situation.toml), the service's own
user-facing strings (strings.toml), and the phrase and word sets derived from them (built on first use)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from rag_server.text.match import Phrase, Phrases, phrase, tokenize
from rag_server.vocabulary.clinical import ClinicalVocabulary, MedicineWords, load_clinical
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
        names and synonyms, class names and members, patient conditions, colloquial phrases."""
        return Phrases(dict.fromkeys([*self.forms_of_phrase, *self.medical_signal]))

    @cached_property
    def forms_of(self) -> dict[tuple[str, ...], tuple[Phrase, ...]]:
        """Folded phrase -> the forms evidence may carry for it (the phrase first): its term groups
        (clinical.toml [[term]]), a condition's name and synonyms, a class member's class ("aspirin" ->
        "salicylat"), the formulary terms of a colloquial phrase (rules.toml [free_form.synonyms])."""
        return {k.folded: tuple(v) for k, v in self.forms_of_phrase.items()}

    @cached_property
    def forms_of_phrase(self) -> dict[Phrase, dict[Phrase, None]]:
        out: dict[tuple[str, ...], dict[Phrase, None]] = {}
        keys: dict[tuple[str, ...], Phrase] = {}

        def add(key: Phrase, forms: Iterable[Phrase]) -> None:
            keys.setdefault(key.folded, key)
            out.setdefault(key.folded, {key: None}).update(dict.fromkeys(forms))

        for group in self.clinical.terms:
            for form in group:
                add(form, group)
        for condition in self.clinical.conditions:
            for form in condition.forms:
                add(form, condition.forms)
        for drug_class in self.clinical.classes:
            for member in drug_class.members:
                add(phrase(member), drug_class.aliases)
        for synonym in self.rules.synonyms:
            add(synonym.phrase, (phrase(t) for t in synonym.terms))
        return {keys[k]: v for k, v in out.items()}

    @cached_property
    def medical_signal(self) -> Phrases:
        """What makes a question medical: clinical terms, condition names and synonyms, class names, and
        the patient conditions of the rules."""
        return Phrases(dict.fromkeys([
            *self.clinical.medical_terms, *self.clinical.condition_forms, *self.clinical.class_aliases,
            *(p for c in self.rules.conditions for p in c.detect),
        ]))

    @cached_property
    def medicine_names(self) -> Phrases:
        """Names of medicines beyond the served formulary: drug classes (their aliases) and their members."""
        return Phrases(dict.fromkeys([
            *self.clinical.class_aliases, *(phrase(m) for c in self.clinical.classes for m in c.members)
        ]))

    @cached_property
    def medicine_words(self) -> MedicineWords:
        """The words of medicine names beyond the formulary (classes, members, ions) and of dosage forms."""
        med = self.clinical.medication
        names = frozenset(w for p in self.medicine_names for w in p.folded) | med.ion_words
        forms = frozenset(w for p in med.strip for w in p.folded)
        return MedicineWords(names - forms, forms)

    @cached_property
    def fillers(self) -> Phrases:
        """Generic words and stopwords, with their accents."""
        return Phrases(dict.fromkeys([*self.clinical.generic, *self.rules.stopword_phrases]))

    @cached_property
    def known_words(self) -> frozenset[str]:
        """Folded words of the section vocabulary (phrases and hints), of rules.toml, of the generic words
        and of the clinical terms, conditions and class names ("proton" of "ức chế bơm proton"): never an
        unknown drug name (a class's members are, and stay, drug names)."""
        texts = [
            t
            for spec in self.vocabulary.sections.values()
            for t in (spec.title, *spec.aliases, *spec.phrases, *spec.hints)
        ]
        words = frozenset(tok.folded for text in texts for tok in tokenize(text))
        c = self.clinical
        phrases = (*c.medical_terms, *c.condition_forms, *c.class_aliases, *(f for g in c.terms for f in g))
        clinical = frozenset(w for p in phrases for w in p.folded)
        return words | self.rules.words() | self.clinical.generic_words | clinical


def load_language() -> Language:
    """The bundled vocabularies (each loader caches its parsed file)."""
    return Language(load_vocabulary(), load_rules(), load_clinical(), load_situation(), load_strings())
