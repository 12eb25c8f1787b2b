"""PDF -> chunks + gates, with no embedding and no store.

build_chunks(pdf_path, vocabulary=..., max_tokens=800, progress=None, workers=0) -> BuildResult
  progress(stage: str, done: int, total: int, message: str) is called per stage
  (stages: "parse", "segment", "chunk", "gates"); `workers` processes read the pages (0: one per CPU core;
  1, or a short document: the calling process; ingest.page_pool). The result does not depend on it.
Raises IngestInputError(kind, message) for bad input: kind an ingest.errors.InputErrorKind (not a PDF,
encrypted, corrupt, no monographs).

Stages (each a small module with a pure core): parse.py (PyMuPDF -> lines in reading order, running headers
removed, folios, tables lifted) -> segment.py (monographs, sections) -> table_images.py (each lifted table's
region rendered as a PNG, with the document still open) -> chunk.py -> gates.py.
Physical pages are 1-based; a SourceRef's printed_page is 0 when the page has no known folio (a gate counts
such chunks). BuildResult.gates must all be 0 before the chunks are loaded; for each failed gate,
BuildResult.diagnostics shows what the parser saw on the first pages involved (ingest.diagnose).
BuildResult.inferred_folios counts the pages whose folio was inferred from agreeing neighbours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from ingest.chunk import chunk_monograph
from ingest.diagnose import GateDiagnosis, diagnose
from ingest.errors import IngestInputError, InputErrorKind
from ingest.gates import Gate, compute_gates
from ingest.gc_pause import gc_paused
from ingest.page_pool import PagePool, resolve_workers
from ingest.page_task import PdfFile
from ingest.parse import PageError, parse_document
from ingest.running import DEFAULT_MARKS
from ingest.segment import SegmentNotes, segment
from ingest.table_images import render_tables
from rag_server.domain import Chunk
from rag_server.vocabulary import Vocabulary, load_vocabulary

__all__ = ["BuildResult", "Gate", "IngestInputError", "MonographInfo", "ProgressFn", "build_chunks"]

ProgressFn = Callable[[str, int, int, str], None]

_DAMAGE = ("cannot load content stream", "page tree load failed")


@dataclass
class MonographInfo:
    drug_id: str
    title: str  # as printed
    drug_name: str
    aliases: list[str]
    section_keys: list[str]
    printed_pages: list[int]  # printed pages its chunks cite, ascending
    physical_pages: list[int]


@dataclass
class BuildResult:
    document_id: str  # sha256 of the PDF bytes, first 16 hex chars
    pdf_sha256: str
    pages: int
    monograph_count: int
    section_count: int
    chunks: list[Chunk]
    gates: list[Gate]
    monographs: list[MonographInfo] = field(default_factory=list)
    page_map: dict[int, int | None] = field(default_factory=dict)  # physical (1-based) -> printed folio
    ignored_headings: dict[str, list[str]] = field(default_factory=dict)  # drug_id -> repeated headings
    ended_early: dict[str, str] = field(default_factory=dict)  # drug_id -> line that ended it (chapter etc.)
    inferred_pages: list[int] = field(default_factory=list)  # pages whose folio was inferred from neighbours
    diagnostics: list[GateDiagnosis] = field(default_factory=list)  # one per failed gate (ingest.diagnose)

    @property
    def inferred_folios(self) -> int:
        return len(self.inferred_pages)

    @property
    def gates_ok(self) -> bool:
        return all(g.count == 0 for g in self.gates)

    @property
    def failed_gates(self) -> list[Gate]:
        return [g for g in self.gates if g.count]


def open_pdf(data: bytes) -> pymupdf.Document:
    """Open PDF bytes or raise IngestInputError(not_pdf | corrupt | encrypted)."""
    if b"%PDF-" not in data[:1024]:
        raise IngestInputError(InputErrorKind.NOT_PDF,
                               "the file is not a PDF (no %PDF- header in its first bytes)")
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise IngestInputError(InputErrorKind.CORRUPT, f"PyMuPDF cannot open the PDF: {exc}") from exc
    if doc.needs_pass:
        doc.close()
        raise IngestInputError(InputErrorKind.ENCRYPTED,
                               "the PDF is encrypted and needs a password; supply an unlocked copy")
    if doc.is_repaired:
        doc.close()
        raise IngestInputError(InputErrorKind.CORRUPT,
                               "the PDF's structure is damaged (its cross-reference table had "
                               "to be repaired; the file may be truncated); re-export it")
    if doc.page_count == 0:
        doc.close()
        raise IngestInputError(InputErrorKind.CORRUPT, "the PDF has no pages")
    return doc


def build_chunks(
    pdf_path: str | Path,
    vocabulary: Vocabulary | None = None,
    max_tokens: int = 800,
    progress: ProgressFn | None = None,
    marks: tuple[str, ...] = DEFAULT_MARKS,
    workers: int = 0,
) -> BuildResult:
    vocab = vocabulary or load_vocabulary()
    source = PdfFile.of(pdf_path)
    data = Path(pdf_path).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    pool = PagePool(source, resolve_workers(workers) if source.unchanged() else 1)
    with gc_paused():
        return _build(data, sha, vocab, max_tokens, progress, marks, pool)


def _build(data: bytes, sha: str, vocab: Vocabulary, max_tokens: int, progress: ProgressFn | None,
           marks: tuple[str, ...], pool: PagePool) -> BuildResult:
    document_id = sha[:16]

    def report(stage: str, done: int, total: int, message: str = "") -> None:
        if progress is not None:
            progress(stage, done, total, message)

    doc = open_pdf(data)
    try:
        pages = doc.page_count
        report("parse", 0, pages, "reading pages")
        try:
            parsed = parse_document(doc, marks, lambda done, total: report("parse", done, total, ""), pool)
        except PageError as exc:
            raise IngestInputError(InputErrorKind.CORRUPT,
                                   f"page {exc.page} of the PDF cannot be read: {exc}") from exc
        warnings = "\n".join([pymupdf.TOOLS.mupdf_warnings(), *pool.warnings]).strip()
        if any(marker in warnings for marker in _DAMAGE):
            raise IngestInputError(InputErrorKind.CORRUPT,
                                   "parts of the PDF's page content cannot be loaded: "
                                   + warnings.splitlines()[0])

        report("segment", 0, 1, "finding monographs and sections")
        notes = SegmentNotes()
        monographs = segment(parsed, vocab, notes)
        if not monographs:
            raise IngestInputError(InputErrorKind.NO_MONOGRAPHS,
                                   f"no monograph was found in {pages} page(s): no "
                                   "upper-case bold or large title followed by identity lines or headings")
        render_tables(doc, monographs)  # the lifted tables' regions, from the document already open
    finally:
        doc.close()
    section_count = sum(len(m.sections) for m in monographs)
    report("segment", 1, 1, f"{len(monographs)} monographs, {section_count} sections")

    chunks: list[Chunk] = []
    infos: list[MonographInfo] = []
    for n, mono in enumerate(monographs, start=1):
        mono_chunks = chunk_monograph(mono, vocab, document_id, parsed.page_map, max_tokens)
        chunks.extend(mono_chunks)
        refs = [r for c in mono_chunks for r in c.source_refs]
        infos.append(MonographInfo(
            drug_id=mono.drug_id, title=mono.title, drug_name=mono.drug_name, aliases=list(mono.aliases),
            section_keys=[s.key for s in mono.sections],
            printed_pages=sorted({r.printed_page for r in refs if r.printed_page > 0}),
            physical_pages=sorted({r.physical_page for r in refs}),
        ))
        report("chunk", n, len(monographs), mono.drug_id)

    report("gates", 0, 1, "checking")
    gates = compute_gates(monographs, chunks, parsed.page_map, vocab, max_tokens)
    failed = sum(1 for g in gates if g.count)
    report("gates", 1, 1, "all gates 0" if not failed else f"{failed} gate(s) failed")
    return BuildResult(
        document_id=document_id, pdf_sha256=sha, pages=pages, monograph_count=len(monographs),
        section_count=section_count, chunks=chunks, gates=gates, monographs=infos,
        page_map=dict(parsed.page_map),
        ignored_headings={m.drug_id: list(m.ignored_headings) for m in monographs if m.ignored_headings},
        ended_early={m.drug_id: m.ended_by for m in monographs if m.ended_by},
        inferred_pages=list(parsed.inferred), diagnostics=diagnose(gates, parsed, notes),
    )
