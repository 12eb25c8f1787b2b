"""Request validation shared by the servicers: each failure is a BadRequest field violation."""

from __future__ import annotations

import re

from rag_server.api.errors import invalid_argument
from rag_server.vocabulary import Vocabulary

MAX_QUERY_CHARS = 2000
DRUG_ID_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
CONVERSATION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


class Violations:
    """Collects field violations and raises them together."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, description: str) -> None:
        self.items.append((field, description))

    def check_query(self, field: str, value: str, required: bool = True) -> None:
        if required and not value.strip():
            self.add(field, "must not be empty")
        elif len(value) > MAX_QUERY_CHARS:
            self.add(field, f"must be at most {MAX_QUERY_CHARS} characters (got {len(value)})")

    def check_drug_id(self, field: str, value: str) -> None:
        if value and not DRUG_ID_PATTERN.fullmatch(value):
            self.add(field, "must be a drug slug such as 'acid-acetylsalicylic' (lower case, digits, '-')")

    def check_section_key(self, field: str, value: str, vocabulary: Vocabulary) -> None:
        if value and value not in vocabulary.sections:
            self.add(field, f"unknown section key {value!r}; known: {', '.join(vocabulary.keys)}")

    def check_conversation_id(self, field: str, value: str) -> None:
        if value and not CONVERSATION_ID_PATTERN.fullmatch(value):
            self.add(field, "must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")

    def raise_if_any(self, message: str = "invalid request") -> None:
        if self.items:
            raise invalid_argument(message, *self.items)
