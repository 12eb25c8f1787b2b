"""Patient facts -> the clinical anchors each facet must find (rules.toml), on fictional text."""

from __future__ import annotations

from rag_server.retrieval.lexical import anchor_matches
from rag_server.text.match import tokenize
from rag_server.understanding.patient import PatientFacts, dosage_anchors, warning_anchors
from rag_server.vocabulary.rules import load_rules


def labels(items: list) -> list[str]:  # type: ignore[type-arg]
    return [f.label for f in items]


def test_flags_and_phrasings_map_to_canonical_conditions() -> None:
    rules = load_rules()
    facts = PatientFacts(conditions=["bệnh thận mạn", "viêm loét dạ dày"], hepatic_impairment=True)
    assert labels(warning_anchors(facts, rules)) == ["suy gan", "suy thận", "loét dạ dày"]
    assert labels(dosage_anchors(facts, rules)) == ["suy gan", "suy thận"]


def test_unknown_condition_or_allergen_must_occur_literally() -> None:
    rules = load_rules()
    (fact,) = warning_anchors(PatientFacts(allergies=["zentoramid"]), rules)
    assert fact.label == "zentoramid"
    assert anchor_matches(tokenize("Quá mẫn với zentoramid."), fact.anchors)


def test_age_becomes_a_band() -> None:
    rules = load_rules()
    assert labels(dosage_anchors(PatientFacts(age_years=72), rules)) == ["người cao tuổi"]
    assert labels(warning_anchors(PatientFacts(age_years=30), rules)) == []


def test_generic_words_are_not_anchors() -> None:
    rules = load_rules()
    (renal,) = dosage_anchors(PatientFacts(renal_impairment=True), rules)
    assert not anchor_matches(tokenize("Theo dõi chức năng hô hấp và thận trọng khi lái xe."), renal.anchors)
    assert anchor_matches(tokenize("Giảm liều ở người suy thận."), renal.anchors)
