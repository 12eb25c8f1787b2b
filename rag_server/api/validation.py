"""Request validation shared by the servicers: each failure is a BadRequest field violation naming the
field and the limit (api/limits.py); a caller's value is never echoed back beyond a short cut."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from rag_server.api import limits as L
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.request_errors import invalid_argument
from rag_server.vocabulary import Vocabulary

DRUG_ID_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
CONVERSATION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_ALLOWED_CONTROLS = frozenset("\t\n\r")


def has_control_characters(value: str) -> bool:
    """C0/C1 control characters (NUL included) other than tab and newlines."""
    return any(unicodedata.category(ch) == "Cc" and ch not in _ALLOWED_CONTROLS for ch in value)


class Violations:
    """Collects field violations and raises them together."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, description: str) -> None:
        self.items.append((field, description))

    def check_text(self, field: str, value: str, max_chars: int, required: bool = True) -> None:
        if required and not value.strip():
            self.add(field, "must not be empty")
        elif len(value) > max_chars:
            self.add(field, f"must be at most {max_chars} characters (got {len(value)})")
        elif has_control_characters(value):
            self.add(field, "must not contain control characters (NUL, escape, ...)")

    def check_query(self, field: str, value: str, required: bool = True) -> None:
        self.check_text(field, value, L.QUERY_CHARS, required)

    def check_indication(self, field: str, value: str, required: bool = True) -> None:
        self.check_text(field, value, L.INDICATION_CHARS, required)

    def check_drug_id(self, field: str, value: str) -> None:
        if len(value) > L.DRUG_ID_CHARS:
            self.add(field, f"must be at most {L.DRUG_ID_CHARS} characters (got {len(value)})")
        elif value and not DRUG_ID_PATTERN.fullmatch(value):
            self.add(field, "must be a drug slug such as 'acid-acetylsalicylic' (lower case, digits, '-')")

    def check_drug_ids(self, field: str, values: Sequence[str], max_items: int) -> None:
        if len(values) > max_items:
            self.add(field, f"at most {max_items} drug ids (got {len(values)})")
            return
        for i, drug_id in enumerate(values):
            if not drug_id:
                self.add(f"{field}[{i}]", "must not be empty")
            self.check_drug_id(f"{field}[{i}]", drug_id)
        if len(set(values)) != len(values):
            self.add(field, "must not repeat a drug")

    def check_section_key(self, field: str, value: str, vocabulary: Vocabulary) -> None:
        if len(value) > L.SECTION_KEY_CHARS:
            self.add(field, f"must be at most {L.SECTION_KEY_CHARS} characters (got {len(value)})")
        elif value and value not in vocabulary.sections:
            self.add(field, f"unknown section key '{L.echo(value)}'; known: {', '.join(vocabulary.keys)}")

    def check_conversation_id(self, field: str, value: str) -> None:
        if value and not CONVERSATION_ID_PATTERN.fullmatch(value):
            self.add(field, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")

    def check_patient(self, field: str, patient: pb.PatientContext) -> None:
        for name in ("current_medications", "conditions", "allergies"):
            items = list(getattr(patient, name))
            if len(items) > L.PATIENT_ITEMS:
                self.add(f"{field}.{name}", f"at most {L.PATIENT_ITEMS} items (got {len(items)})")
                continue
            for i, item in enumerate(items):
                self.check_text(f"{field}.{name}[{i}]", item, L.PATIENT_ITEM_CHARS, required=False)
        if not 0 <= patient.age_years <= L.AGE_YEARS_MAX:
            self.add(f"{field}.age_years", f"must be between 0 (not stated) and {L.AGE_YEARS_MAX}")

    def raise_if_any(self, message: str = "invalid request") -> None:
        if self.items:
            raise invalid_argument(message, *self.items)
