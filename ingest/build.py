"""CONTRACT (being implemented): PDF -> chunks + gates, with no embedding and no store.

build_chunks(pdf_path, vocabulary=..., max_tokens=800, progress=None) -> BuildResult
  progress(stage: str, done: int, total: int, message: str) is called per stage
  (stages: "parse", "segment", "chunk", "gates").
Raises IngestInputError(kind, message) for bad input: kind in
  {"not_pdf", "encrypted", "corrupt", "no_monographs"}.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rag_server.domain import Chunk

ProgressFn = Callable[[str, int, int, str], None]


class IngestInputError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class Gate:
    name: str
    count: int
    examples: list[str] = field(default_factory=list)


@dataclass
class BuildResult:
    document_id: str  # sha256 of the PDF bytes, first 16 hex chars
    pdf_sha256: str
    pages: int
    monograph_count: int
    section_count: int
    chunks: list[Chunk]
    gates: list[Gate]
