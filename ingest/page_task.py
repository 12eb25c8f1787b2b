"""What the page pool (`ingest.page_pool`) and its worker processes (`ingest.page_worker`) share: the task
(a PdfFile and a range of pages), reading it (`read_range`), its result (`ReadResult`, pages packed as plain
tuples) and the framing of the pipes between them (length-prefixed pickles, `send` / `receive`). Neither
side imports the other."""

from __future__ import annotations

import os
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pymupdf

from ingest.layout import Span, TextLine
from ingest.parse import RawPage, extract_page

_HEADER = struct.Struct("<Q")
READY = "ready"  # the first message a worker sends: its imports are done, it takes tasks


def send(stream: BinaryIO, item: object) -> None:
    data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def receive(stream: BinaryIO) -> object | None:
    """The next item, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("truncated message")
    item: object = pickle.loads(data)
    return item


@dataclass(frozen=True)
class PdfFile:
    """A PDF on disk as it was when it was read: the workers open it only if it is still the same."""

    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str | Path) -> PdfFile:
        stat = os.stat(path)
        return cls(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)

    def unchanged(self) -> bool:
        try:
            return PdfFile.of(self.path) == self
        except OSError:
            return False


class SourceChanged(RuntimeError):
    """The PDF file changed since it was hashed: a worker will not read it."""


PackedPage = tuple[Any, ...]  # a RawPage as plain tuples: quicker to pickle, unpickle and send


def pack(raw: RawPage) -> PackedPage:
    lines = [([tuple(span) for span in line.spans], line.bbox) for line in raw.lines]
    return raw.page, raw.width, raw.height, lines, raw.horizontal, raw.tables, raw.words


def unpack(packed: PackedPage) -> RawPage:
    page, width, height, lines, horizontal, tables, words = packed
    new = tuple.__new__
    return RawPage(page, width, height, [TextLine([new(Span, span) for span in spans], page, bbox)
                                         for spans, bbox in lines], horizontal, tables, words)


@dataclass
class ReadResult:
    pages: list[PackedPage]
    warnings: str
    failed: tuple[int, str] | None = None  # (physical page, error) of a page that could not be read
    here: list[RawPage] | None = None  # the pages, when this process read them (not packed)

    def raw_pages(self) -> list[RawPage]:
        return self.here if self.here is not None else [unpack(packed) for packed in self.pages]


_OPEN: tuple[PdfFile, pymupdf.Document] | None = None  # a worker's open document


def read_range(source: PdfFile, first: int, last: int) -> ReadResult:
    """Pages [first, last) (0-based indexes) of the PDF, in a worker process."""
    global _OPEN
    if _OPEN is None or _OPEN[0] != source:
        if not source.unchanged():
            raise SourceChanged(source.path)
        _OPEN = (source, pymupdf.open(source.path))
    doc = _OPEN[1]
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    pages: list[PackedPage] = []
    for index in range(first, last):
        try:
            pages.append(pack(extract_page(doc.load_page(index), index + 1)))
        except Exception as exc:  # PyMuPDF raises plain RuntimeError/ValueError subclasses
            failed = (index + 1, f"{type(exc).__name__}: {exc}")
            return ReadResult(pages, pymupdf.TOOLS.mupdf_warnings(), failed)
    return ReadResult(pages, pymupdf.TOOLS.mupdf_warnings())
