"""Which classes a medicine belongs to, derived from the formulary itself plus the clinical vocabulary.

A medicine is a member of a class (clinical.toml [[drug_class]]) when
  * it resolves to a monograph whose ATC code starts with one of the class's ATC prefixes, or whose
    Loại thuốc line names the class (any alias) — membership read from the formulary;
  * or one of its names is a listed member (through spelling variants and bounded typos) — for medicines
    the served formulary has no monograph of.
Each membership says how it is known, so the evidence can say why a class text was picked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rag_server.text.match import Phrase, Tok, find_any, tokenize
from rag_server.text.spelling import within_typo
from rag_server.understanding.catalog import Catalog
from rag_server.understanding.medications import MedicationName, name_keys
from rag_server.vocabulary.clinical import ClinicalVocabulary, DrugClass


@dataclass(frozen=True)
class Membership:
    drug_class: DrugClass
    via: str  # "ATC C08CA01", "Loại thuốc: ...", "clinical vocabulary"


class ClassIndex:
    """Built once per served catalog; lookups cost O(keys of the medicine x member keys sharing a first
    letter)."""

    def __init__(self, clinical: ClinicalVocabulary, catalog: Catalog | None) -> None:
        self.clinical = clinical
        self.catalog = catalog
        self._members: dict[str, list[tuple[str, DrugClass]]] = defaultdict(list)  # first letter -> keys
        for cls in clinical.classes:
            for member in cls.members:
                for key in name_keys(member, clinical.medication):
                    self._members[key[:1]].append((key, cls))
        self._by_alias: dict[Phrase, list[DrugClass]] = defaultdict(list)  # alias -> the classes it names
        for cls in clinical.classes:
            for alias in cls.aliases:
                self._by_alias[alias].append(cls)
        self._of_drug: dict[str, list[Membership]] = {}
        if catalog is not None:
            for drug_id, info in catalog.drugs.items():
                self._of_drug[drug_id] = self._formulary_classes(info.atc_codes, info.class_text)

    def _formulary_classes(self, atc_codes: Sequence[str], class_text: str) -> list[Membership]:
        out: list[Membership] = []
        toks = tokenize(class_text)
        named = {cls.name for cls in self._named(toks)}
        for cls in self.clinical.classes:
            code = next((c for c in atc_codes for prefix in cls.atc if c.startswith(prefix)), "")
            if code:
                out.append(Membership(cls, f"ATC {code}"))
            elif cls.name in named:
                out.append(Membership(cls, f"Loại thuốc: {class_text}"))
        return out

    def _named(self, toks: Sequence[Tok]) -> list[DrugClass]:
        """The classes whose aliases the text names ("thuốc ức chế MAO", "NSAID")."""
        found = find_any(toks, self.clinical.class_aliases)
        return [cls for _, alias in found for cls in self._by_alias[alias]]

    def classes_of(self, medication: MedicationName) -> list[Membership]:
        """Every class the medicine belongs to, formulary memberships first."""
        found: dict[str, Membership] = {}
        if medication.drug_id:
            for m in self._of_drug.get(medication.drug_id, []):
                found.setdefault(m.drug_class.name, m)
        for key in medication.keys:
            for member_key, cls in self._members.get(key[:1], ()):
                if member_key == key or within_typo(member_key, key) is not None:
                    found.setdefault(cls.name, Membership(cls, "clinical vocabulary"))
        # the class itself, named as the medicine ("đang dùng IMAO", "thuốc chống đông")
        for cls in self._named(tokenize(medication.name)):
            found.setdefault(cls.name, Membership(cls, "the class named"))
        return list(found.values())
