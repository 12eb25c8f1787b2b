"""Plain records of a parsed page: spans, text lines, tables, pages, and the physical -> printed page map.

No PyMuPDF types here, so the pure stages (reading order, running headers, segmentation, chunking)
can be tested on hand-made lines. Physical pages are 1-based, as a PDF viewer shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BBox = tuple[float, float, float, float]


@dataclass(frozen=True)
class Span:
    """A run of text in one style, as PyMuPDF reports it (merged with neighbours of the same style)."""

    text: str
    font: str = ""
    size: float = 10.0
    bold: bool = False
    italic: bool = False
    bbox: BBox = (0.0, 0.0, 0.0, 0.0)
    baseline: float = 0.0

    @property
    def styled(self) -> bool:
        return self.bold or self.italic


@dataclass
class TextLine:
    """One printed line (or a piece of one, when a wide gap splits it) on one physical page."""

    spans: list[Span]
    page: int
    bbox: BBox
    column: int = 0  # 0 single/left, 1 right, -1 full width (after reading order)
    visual: bool = False  # part of a 2-D formula region: must be checked on the page
    table_id: str = ""  # set on the marker line that stands where a lifted-out table was

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.spans)

    @property
    def x0(self) -> float:
        return self.bbox[0]

    @property
    def y0(self) -> float:
        return self.bbox[1]

    @property
    def x1(self) -> float:
        return self.bbox[2]

    @property
    def y1(self) -> float:
        return self.bbox[3]

    @property
    def height(self) -> float:
        return max(0.1, self.bbox[3] - self.bbox[1])

    @property
    def size(self) -> float:
        """Size of the line's text, weighted by characters."""
        total = sum(len(s.text.strip()) for s in self.spans)
        if total == 0:
            return self.spans[0].size if self.spans else 0.0
        return sum(s.size * len(s.text.strip()) for s in self.spans) / total

    @property
    def all_bold(self) -> bool:
        content = [s for s in self.spans if s.text.strip()]
        return bool(content) and all(s.bold for s in content)

    @property
    def all_italic(self) -> bool:
        content = [s for s in self.spans if s.text.strip()]
        return bool(content) and all(s.italic for s in content)


@dataclass
class TableRegion:
    """A table lifted out of the prose: its rows (cells as text) and where it was."""

    page: int
    bbox: BBox
    rows: list[list[str]]


@dataclass
class PageLayout:
    page: int  # physical, 1-based
    width: float
    height: float
    lines: list[TextLine] = field(default_factory=list)  # body, in reading order (table markers included)
    running: list[TextLine] = field(default_factory=list)  # running headers/footers removed from the text
    tables: dict[str, TableRegion] = field(default_factory=dict)  # page-local id -> table
    folio: int | None = None  # printed page number read from the running lines
    columns: int = 1
    kept_edges: list[str] = field(default_factory=list)  # rows at the page edges left in the body


@dataclass
class ParsedDocument:
    pages: list[PageLayout]
    page_map: dict[int, int | None]  # physical -> printed folio (None when unknown)
    body_size: float
    inferred: list[int] = field(default_factory=list)  # pages whose folio was inferred from neighbours

    def printed(self, page: int) -> int | None:
        return self.page_map.get(page)
