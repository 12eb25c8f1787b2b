"""The evaluation question file: one JSON object a line.

Kinds:
* ``section``: gold_drug_id + gold_section_key; scored on Retrieve's top evidence (hit@1). With a
  ``conversation`` (earlier questions, asked first through Ask in one conversation), the follow-up is
  scored on the frame Understand reads for it in that conversation (its drug and section).
* ``indication``: gold_drug_ids; LookupIndication{indication} (or the query) scored by recall@k.
* ``nonsense_indication``: a made-up condition; correct when LookupIndication returns no drug.
* ``abstain``: expect_decision (a DecisionKind or DecisionReason name, or a list of alternatives;
  ``INVALID_ARGUMENT`` accepts that gRPC status); correct when Retrieve does not answer and its decision
  matches one of them. An abstain question answered anyway counts as a false answer.
* ``patient``: drug_ids + patient (PatientContext fields as JSON); AssessPatient's facet ``gold_facet``
  of the first drug must have status ``expect_status``, and (when given) one of its evidence texts must
  contain one of ``gold_terms`` (accent-folded).
* ``corpus``: a medical question naming no drug; correct when Retrieve answers and its top evidence text
  contains one of ``gold_terms`` (accent-folded).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("section", "indication", "nonsense_indication", "abstain", "patient", "corpus")
FACETS = ("interaction", "warning", "dosage_context", "pregnancy", "breastfeeding")
STATUSES = ("EVIDENCE_FOUND", "INSUFFICIENT_EVIDENCE", "VERIFY_PDF")
PATIENT_LISTS = ("current_medications", "conditions", "allergies")
PATIENT_FLAGS = ("pregnant", "breastfeeding", "renal_impairment", "hepatic_impairment")


class DatasetError(ValueError):
    """The question file is malformed (the message names the line)."""


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    query: str
    gold_drug_id: str = ""
    gold_section_key: str = ""
    gold_drug_ids: tuple[str, ...] = ()
    indication: str = ""
    style: tuple[str, ...] = ()
    expect_decision: tuple[str, ...] = ()
    drug_ids: tuple[str, ...] = ()
    patient: tuple[tuple[str, Any], ...] = ()  # PatientContext fields, as (name, value) pairs
    gold_facet: str = ""
    expect_status: str = ""
    gold_terms: tuple[str, ...] = ()
    conversation: tuple[str, ...] = ()  # earlier questions of the same conversation, asked first

    @property
    def indication_text(self) -> str:
        """What LookupIndication is sent: the condition phrase when given, else the whole query."""
        return self.indication or self.query


def _str_tuple(value: Any, field: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise DatasetError(f"{where}: {field} must be a string or a list of strings")


def parse_question(obj: Any, where: str = "question", section_keys: Iterable[str] | None = None) -> Question:
    """Validate one decoded JSON object; `section_keys` (when given) bounds gold_section_key."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object")
    qid, kind, query = obj.get("id"), obj.get("kind"), obj.get("query")
    if not isinstance(qid, str) or not qid:
        raise DatasetError(f"{where}: id must be a non-empty string")
    where = f"{where} ({qid})"
    if kind not in KINDS:
        raise DatasetError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(query, str) or not query.strip():
        raise DatasetError(f"{where}: query must be a non-empty string")
    question = Question(
        id=qid,
        kind=kind,
        query=query,
        gold_drug_id=str(obj.get("gold_drug_id") or ""),
        gold_section_key=str(obj.get("gold_section_key") or ""),
        gold_drug_ids=_str_tuple(obj.get("gold_drug_ids"), "gold_drug_ids", where),
        indication=str(obj.get("indication") or ""),
        style=_str_tuple(obj.get("style"), "style", where),
        expect_decision=tuple(
            _normalise_decision(v) for v in _str_tuple(obj.get("expect_decision"), "expect_decision", where)
        ),
        drug_ids=_str_tuple(obj.get("drug_ids"), "drug_ids", where),
        patient=_patient(obj.get("patient"), where),
        gold_facet=str(obj.get("gold_facet") or ""),
        expect_status=str(obj.get("expect_status") or "").upper(),
        gold_terms=_str_tuple(obj.get("gold_terms"), "gold_terms", where),
        conversation=_str_tuple(obj.get("conversation"), "conversation", where),
    )
    if kind == "section":
        if not question.gold_drug_id or not question.gold_section_key:
            raise DatasetError(f"{where}: a section question needs gold_drug_id and gold_section_key")
        if section_keys is not None and question.gold_section_key not in set(section_keys):
            raise DatasetError(f"{where}: unknown gold_section_key {question.gold_section_key!r}")
    elif kind == "indication" and not question.gold_drug_ids:
        raise DatasetError(f"{where}: an indication question needs gold_drug_ids")
    elif kind == "nonsense_indication" and question.gold_drug_ids:
        raise DatasetError(f"{where}: a nonsense indication has no gold drugs")
    elif kind == "abstain" and not question.expect_decision:
        raise DatasetError(f"{where}: an abstain question needs expect_decision")
    elif kind == "patient":
        if not question.drug_ids or not question.patient:
            raise DatasetError(f"{where}: a patient question needs drug_ids and patient")
        if question.gold_facet not in FACETS or question.expect_status not in STATUSES:
            raise DatasetError(
                f"{where}: gold_facet must be one of {FACETS}, expect_status one of {STATUSES}"
            )
    elif kind == "corpus" and not question.gold_terms:
        raise DatasetError(f"{where}: a corpus question needs gold_terms")
    return question


def _patient(value: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: patient must be an object")
    out: list[tuple[str, Any]] = []
    for name, item in sorted(value.items()):
        if name in PATIENT_LISTS:
            out.append((name, _str_tuple(item, f"patient.{name}", where)))
        elif (name in PATIENT_FLAGS and isinstance(item, bool)) or (
            name == "age_years" and isinstance(item, int) and not isinstance(item, bool)
        ):
            out.append((name, item))
        else:
            raise DatasetError(f"{where}: unknown or malformed patient field {name!r}")
    return tuple(out)


def _normalise_decision(name: str) -> str:
    """`DECISION_REASON_DRUG_NOT_FOUND` / `drug_not_found` -> `DRUG_NOT_FOUND`."""
    upper = name.strip().upper()
    for prefix in ("DECISION_REASON_", "DECISION_KIND_"):
        if upper.startswith(prefix):
            return upper[len(prefix):]
    return upper


def load_questions(path: Path | str, section_keys: Iterable[str] | None = None) -> list[Question]:
    """Every question of a JSONL file (blank lines and `#` comments skipped); ids must be unique."""
    keys = list(section_keys) if section_keys is not None else None
    questions: list[Question] = []
    seen: set[str] = set()
    with Path(path).open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            where = f"{path}:{line_no}"
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{where}: invalid JSON ({exc.msg})") from exc
            question = parse_question(obj, where, keys)
            if question.id in seen:
                raise DatasetError(f"{where}: duplicate id {question.id!r}")
            seen.add(question.id)
            questions.append(question)
    if not questions:
        raise DatasetError(f"{path}: no questions")
    return questions
