"""Parse: PDF pages -> styled lines in reading order, running headers removed, tables lifted, folios read.

With `ingest.page_text` (a page's text) and `ingest.page_pool` (pages read by worker processes), the only
modules that talk to PyMuPDF's page objects; everything after works on `ingest.layout` records. Per page:
spans (text, font, size, bold/italic, bbox, baseline) from one `page.get_text("dict")` or ("rawdict", see
`ingest.page_text`), fully ruled tables from `page.find_tables()` (only where the drawings hold a grid; the
words with their boxes are read for their cells), horizontal rules for the tables `ingest.tables` finds
(the words are read, on demand, for a page with a rule inside its body), formula bars from the drawings.
Then, over the whole document: body text size, page furniture and folios (`ingest.running`), the page map,
tables ruled by horizontal lines only or not ruled at all, reading order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pymupdf

from ingest.layout import BBox, PageLayout, ParsedDocument, Span, TableRegion, TextLine
from ingest.page_text import chars_text, page_lines
from ingest.reading_order import find_gutter, order_lines
from ingest.regions import Segment, has_grid, inside, mark_formulas, rules_from_drawings
from ingest.running import DEFAULT_MARKS, build_page_map, detect_running, inferred_pages
from ingest.tables import Layout, Token, find_text_tables
from rag_server.vocabulary.strings import load_strings

__all__ = ["PageError", "PageSource", "RawPage", "ReadRange", "chars_text", "extract_page", "layout_pages",
           "page_words", "parse_document", "read_pages", "read_range"]

PageProgress = Callable[[int, int], None]


class PageError(Exception):
    """A page could not be loaded or read."""

    def __init__(self, page: int, cause: BaseException) -> None:
        super().__init__(f"page {page}: {cause}")
        self.page = page


@dataclass
class RawPage:
    page: int
    width: float
    height: float
    lines: list[TextLine]
    horizontal: list[Segment] = field(default_factory=list)
    tables: list[TableRegion] = field(default_factory=list)
    words: list[Token] | None = None  # read with the lines on pages with a grid; else on demand (None)


def table_marker(page: int) -> str:
    """What stands in the prose where the table of `page` was lifted out (strings.toml [chunk])."""
    return load_strings().in_chunk("table_marker", page=page)


def _cell_box(cell: Any) -> BBox:
    return (float(cell[0]), float(cell[1]), float(cell[2]), float(cell[3]))


def _fits(line: TextLine, box: BBox) -> bool:
    return box[0] - 2.0 <= line.x0 and line.x1 <= box[2] + 2.0


def table_cells(lines: list[TextLine], words: list[Token], rows: list[list[Any]]) -> list[list[str]]:
    """The text of each cell of a grid (PyMuPDF's own cell text drops narrow spaces): the lines whose
    centre lies in the cell; a line that runs into the next cell (text nearly touching the rule) gives each
    cell the words of it that lie there."""
    boxes = [_cell_box(cell) for row in rows for cell in row if cell is not None]
    whole: list[TextLine] = []
    words_across: list[Token] = []
    for line in lines:
        home = next((box for box in boxes if inside(line, box, slack=0.0)), None)
        if home is None:
            continue
        if _fits(line, home):
            whole.append(line)
        else:
            words_across += [w for w in words if line.x0 - 1 <= (w.x0 + w.x1) / 2 <= line.x1 + 1
                             and line.y0 - 1 <= w.cy <= line.y1 + 1]
    out: list[list[str]] = []
    for row in rows:
        texts: list[str] = []
        for cell in row:
            if cell is None:
                texts.append("")
                continue
            box = _cell_box(cell)
            parts = [((ln.y0 + ln.y1) / 2, ln.x0, " ".join(ln.text.split())) for ln in whole
                     if inside(ln, box, slack=0.0)]
            parts += [(w.cy, w.x0, w.text) for w in words_across
                      if box[0] <= (w.x0 + w.x1) / 2 <= box[2] and box[1] <= w.cy <= box[3]]
            parts.sort(key=lambda part: (round(part[0]), part[1]))
            texts.append(" ".join(text for _, _, text in parts))
        out.append(texts)
    return out


def extract_page(page: pymupdf.Page, number: int) -> RawPage:
    """Lines, rules and tables of one page (number is physical and 1-based)."""
    horizontal, vertical = rules_from_drawings(page.get_drawings())
    # Words with their boxes: for the cells of grids here; for tables ruled by lines only, read on demand
    # (`page_words`) when the page has a rule inside its body, which few pages have.
    grid = has_grid(horizontal, vertical)
    lines, words = page_lines(page, number, grid)
    tables: list[TableRegion] = []
    if grid:
        # Only the region of the vertical rules (a header rule spans the page but holds no table): ~2x faster.
        clip = pymupdf.Rect(min(v[0] for v in vertical) - 3, min(v[1] for v in vertical) - 3,
                            max(v[2] for v in vertical) + 3, max(v[3] for v in vertical) + 3)
        for table in page.find_tables(clip=clip, use_layout=False).tables:
            rows = table_cells(lines, words, [list(row.cells) for row in table.rows])
            if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
                x0, y0, x1, y1 = (float(v) for v in table.bbox)
                tables.append(TableRegion(page=number, bbox=(x0, y0, x1, y1), rows=rows))
    rect = page.rect
    free_rules = [seg for seg in horizontal if not any(_seg_inside(seg, t.bbox) for t in tables)]
    return RawPage(number, float(rect.width), float(rect.height), lines, free_rules, tables,
                   words if grid else None)


def page_words(doc: pymupdf.Document, number: int) -> list[Token]:
    """The words (with their boxes) of physical page `number`, as `extract_page` reads them."""
    return page_lines(doc.load_page(number - 1), number, True)[1]


def _seg_inside(seg: Segment, box: BBox) -> bool:
    return box[0] - 2 <= seg[0] and seg[2] <= box[2] + 2 and box[1] - 2 <= seg[1] <= box[3] + 2


def body_size_of(pages: list[RawPage]) -> float:
    """The most common text size, weighted by characters (0.5 pt bins)."""
    counts: Counter[float] = Counter()
    for raw in pages:
        for line in raw.lines:
            for span in line.spans:
                counts[round(span.size * 2) / 2] += len(span.text.strip())
    return counts.most_common(1)[0][0] if counts else 10.0


WordsOf = Callable[[int], list[Token]]  # physical page -> its words, read on demand


def layout_pages(raw_pages: list[RawPage], marks: tuple[str, ...] = DEFAULT_MARKS,
                 words_of: WordsOf | None = None) -> ParsedDocument:
    """Whole-document steps on extracted pages: running lines, folios, tables, formulas, reading order.
    `words_of` reads a page's words when a table ruled by lines may need them (none read: line pieces)."""
    body_size = body_size_of(raw_pages)
    candidates: dict[int, list[TextLine]] = {}
    for raw in raw_pages:
        boxes = [t.bbox for t in raw.tables]
        candidates[raw.page] = [ln for ln in raw.lines if not any(inside(ln, b) for b in boxes)]
    running = detect_running(
        [(raw.page, raw.width, raw.height, candidates[raw.page]) for raw in raw_pages], body_size, marks)
    page_map = build_page_map(running.folios)
    layouts: list[PageLayout] = []
    carry: Layout | None = None  # an unruled table broken at the end of the previous page
    for raw in raw_pages:
        dropped = running.removed.get(raw.page, set())
        kept = [ln for i, ln in enumerate(candidates[raw.page]) if i not in dropped]
        run_lines = [ln for i, ln in enumerate(candidates[raw.page]) if i in dropped]
        words = _WordsOutside(raw, run_lines, words_of)
        gutter = find_gutter(kept, raw.width)
        text_tables = find_text_tables(raw.page, kept, words, raw.horizontal, gutter, carry)
        found, carry = text_tables.regions, text_tables.carry
        kept = [ln for ln in kept if not any(inside(ln, t.bbox, slack=0.5) for t in found)]
        for line in kept:  # a small table broken at a column end: kept as text, checked on the page
            line.visual = line.visual or any(inside(line, box, slack=0.5) for box in text_tables.verify)
        tables: dict[str, TableRegion] = {}
        every = sorted([*raw.tables, *found], key=lambda t: (t.bbox[1], t.bbox[0]))
        for k, table in enumerate(every, start=1):
            local_id = f"p{raw.page}t{k}"
            tables[local_id] = table
            kept.append(TextLine(spans=[Span(table_marker(raw.page), size=body_size, bbox=table.bbox,
                                             baseline=table.bbox[3])],
                                 page=raw.page, bbox=table.bbox, visual=True, table_id=local_id))
        boxes = [t.bbox for t in tables.values()]
        mark_formulas([ln for ln in kept if not ln.table_id], raw.horizontal, body_size, boxes)
        # Without tables the lines are the ones the gutter was found for: it is not looked for again.
        ordered, columns = order_lines(kept, raw.width, gutter) if not every else order_lines(kept, raw.width)
        layouts.append(PageLayout(page=raw.page, width=raw.width, height=raw.height, lines=ordered,
                                  running=run_lines, tables=tables, folio=running.folios.get(raw.page),
                                  columns=columns, kept_edges=running.kept.get(raw.page, [])))
    return ParsedDocument(pages=layouts, page_map=page_map, body_size=body_size,
                          inferred=inferred_pages(running.folios, page_map))


class _WordsOutside:
    """The page's words that are not part of its furniture, read when first asked for."""

    def __init__(self, raw: RawPage, furniture: list[TextLine], words_of: WordsOf | None) -> None:
        self.raw, self.furniture, self.words_of = raw, furniture, words_of

    def __call__(self) -> list[Token]:
        words = self.raw.words
        if words is None:
            words = self.words_of(self.raw.page) if self.words_of is not None else []
        return _words_outside(words, self.furniture)


def _words_outside(words: list[Token], furniture: list[TextLine]) -> list[Token]:
    """The words that are not part of the page furniture."""
    if not words or not furniture:
        return words
    boxes = [ln.bbox for ln in furniture]
    return [w for w in words if not any(b[1] - 1 <= w.cy <= b[3] + 1
                                        and b[0] - 1 <= (w.x0 + w.x1) / 2 <= b[2] + 1 for b in boxes)]


ReadRange = Callable[[int, int], list[RawPage]]  # pages [first, last) (0-based indexes), read here


class PageSource(Protocol):
    """Reads every page of the document with processes of its own, this one (`here`) reading some of them
    too (`ingest.page_pool.PagePool`), or declines (None)."""

    def read(self, total: int, here: ReadRange,
             progress: PageProgress | None = None) -> list[RawPage] | None: ...


def read_range(doc: pymupdf.Document, first: int, last: int) -> list[RawPage]:
    """Pages [first, last) (0-based indexes) of an open document. Raises PageError when a page cannot be
    loaded or read."""
    raw_pages: list[RawPage] = []
    for index in range(first, last):
        try:
            raw_pages.append(extract_page(doc.load_page(index), index + 1))
        except Exception as exc:  # PyMuPDF raises plain RuntimeError/ValueError subclasses
            raise PageError(index + 1, exc) from exc
    return raw_pages


def read_pages(doc: pymupdf.Document, progress: PageProgress | None = None) -> list[RawPage]:
    """Every page of an open document, one by one. Raises PageError when a page cannot be loaded or read."""
    total = doc.page_count
    raw_pages: list[RawPage] = []
    for first in range(0, total, 25):
        raw_pages += read_range(doc, first, min(total, first + 25))
        if progress is not None:
            progress(len(raw_pages), total)
    return raw_pages


def parse_document(doc: pymupdf.Document, marks: tuple[str, ...] = DEFAULT_MARKS,
                   progress: PageProgress | None = None, pages: PageSource | None = None) -> ParsedDocument:
    """All pages of an open document, read by `pages` (a pool of processes) when it takes them, else here.
    Raises PageError when a page cannot be loaded or read."""
    here: ReadRange = lambda first, last: read_range(doc, first, last)  # noqa: E731
    raw_pages = pages.read(doc.page_count, here, progress) if pages is not None else None
    if raw_pages is None:
        raw_pages = read_pages(doc, progress)
    return layout_pages(raw_pages, marks, lambda number: page_words(doc, number))
