"""Which lines of a dosing section speak of the patient's age: a patient's age is a fact asked, and it is
answered by the lines for their group ("Người lớn: …" for a 40-year-old, "Người cao tuổi: …" for 72 years,
"Trẻ em từ 6 tuổi: …" for an 8-year-old), said first as a notice naming the age and the line's label, so the
clinician reads the right line of a section shown whole. A child outside the section's bounds is told that
instead (answer.evidence), and a group the section is silent on is a gap, never these lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_server.text.match import find_any, tokenize
from rag_server.understanding.frame import Group, QueryFrame
from rag_server.vocabulary.language import Language

ADULT = "adult"  # rules.toml [[group]]: no patient group of its own (an adult is the book's default reader)
MAX_LABEL_CHARS = 60  # "Người cao tuổi, người suy gan": a line's label before its ":"
LABEL_WORDS = 8  # a line without a short label is named by its first words


def age_lines(frame: QueryFrame, texts: Sequence[str], language: Language, section: str, drug: str) -> str:
    """The notice naming the line of `texts` (a dosing section's sentences) for the patient's age group, ""
    when the patient states no age or no line speaks of their group. A child or an infant reads only the
    children's lines; an elderly patient the elderly lines, else the adults'."""
    patient = frame.patient
    age = patient.age_in_years
    if age is None:
        return ""
    groups = patient.groups
    if Group.INFANT in groups or Group.CHILD in groups:
        names = [g.value for g in (Group.INFANT, Group.CHILD) if g in groups]
    elif Group.ELDERLY in groups:
        names = [Group.ELDERLY.value, ADULT]
    else:
        names = [ADULT]
    for name in names:
        words = next((g for g in language.rules.groups if g.name == name), None)
        if words is None:
            continue
        line = next((t for t in texts if find_any(tokenize(t), words.anchors)), None)
        if line is not None:
            return language.strings.notice(
                "group_lines", patient=_said(frame), section=section, drug=drug,
                group=language.strings.groups.get(name, name), line=_label(line),
            )
    return ""


def _said(frame: QueryFrame) -> str:
    p = frame.patient
    if p.age_months is not None and p.age_years is None:
        return f"{p.age_months} tháng tuổi"
    age = p.age_in_years
    return f"{age:g} tuổi" if age is not None else ""


def _label(line: str) -> str:
    head, colon, _ = line.partition(":")
    if colon and len(head) <= MAX_LABEL_CHARS:
        return head.strip()
    words = line.split()
    return " ".join(words[:LABEL_WORDS]) + (" …" if len(words) > LABEL_WORDS else "")
