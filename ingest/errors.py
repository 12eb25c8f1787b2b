"""Why a PDF cannot be ingested at all (before any gate is counted): the kind of bad input, an enum the
gRPC layer maps to a status (rag_server/api/ingestion.py) and the CLI prints."""

from __future__ import annotations

from enum import StrEnum


class InputErrorKind(StrEnum):
    NOT_PDF = "not_pdf"  # no %PDF- header in its first bytes
    CORRUPT = "corrupt"  # PyMuPDF cannot open or read it
    ENCRYPTED = "encrypted"  # it needs a password
    NO_MONOGRAPHS = "no_monographs"  # it opens, but holds no monograph of the formulary


class IngestInputError(Exception):
    def __init__(self, kind: InputErrorKind | str, message: str) -> None:
        super().__init__(message)
        self.kind = InputErrorKind(kind)
        self.message = message
