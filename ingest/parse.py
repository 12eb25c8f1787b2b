"""Parse: PDF pages -> styled lines in reading order, running headers removed, tables lifted, folios read.

The only module that talks to PyMuPDF's page objects; everything after it works on `ingest.layout` records.
Per page: spans (text, font, size, bold/italic, bbox, baseline) from `page.get_text("rawdict")`, fully ruled
tables from `page.find_tables()` (only where the drawings hold a grid), horizontal rules (and, on pages that
have any, the words with their boxes) for the tables `ingest.tables` finds, formula bars from the drawings.
Then, over the whole document: body text size, page furniture and folios (`ingest.running`), the page map,
tables ruled by horizontal lines only or not ruled at all, reading order.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from ingest.layout import BBox, PageLayout, ParsedDocument, Span, TableRegion, TextLine
from ingest.reading_order import find_gutter, order_lines
from ingest.regions import Segment, has_grid, inside, mark_formulas, rules_from_drawings
from ingest.running import DEFAULT_MARKS, build_page_map, detect_running, inferred_pages
from ingest.tables import Layout, Token, find_text_tables

TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_COLLECT_STYLES
_FILL_AND_STROKE = 16 | 32  # char_flags of text both filled and stroked: synthetic ("fake") bold
_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demibold", ",bd")
_ITALIC_NAMES = ("italic", "oblique", ",it")
_DROP = dict.fromkeys(map(ord, "\u00ad\u200b\ufeff"), None)
WORD_GAP = 0.15  # x font size: a horizontal gap this wide between two characters separates words

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
    words: list[Token] = field(default_factory=list)  # only on pages with horizontal rules


def table_marker(page: int) -> str:
    return f"[Bảng: xem trang PDF {page}]"


def chars_text(chars: list[dict[str, Any]], size: float) -> str:
    """A span's text from its characters, with a space wherever the next character starts a word-gap
    after the previous one ends. MuPDF does not always insert one itself: after a letter with a
    diacritic ("Chỉ", "chế", "hạ") it glues separately positioned words ("Chỉđịnh"), as a PDF whose
    words are placed one by one without space glyphs (justified text, many typesetters) shows."""
    out: list[str] = []
    prev_end: float | None = None
    for ch in chars:
        c = str(ch.get("c", ""))
        x0 = float(ch["origin"][0])
        if prev_end is not None and out and not c.isspace() and not out[-1].isspace() \
                and x0 - prev_end > WORD_GAP * size:
            out.append(" ")
        out.append(c)
        prev_end = float(ch["bbox"][2])
    return "".join(out)


def chars_text_words(chars: list[dict[str, Any]], size: float) -> tuple[str, list[Token]]:
    """`chars_text` and the words of the span with their boxes (split where it puts or finds a space), in
    one pass over the characters."""
    out: list[str] = []
    words: list[Token] = []
    word: list[str] = []
    gap = WORD_GAP * size
    x0 = y0 = x1 = y1 = 0.0
    prev_end: float | None = None
    for ch in chars:
        c = str(ch.get("c", ""))
        bb = ch["bbox"]
        space = c.isspace()
        if prev_end is not None and out and not space and not out[-1].isspace() \
                and float(ch["origin"][0]) - prev_end > gap:
            out.append(" ")
            if word:
                words.append(Token(unicodedata.normalize("NFC", "".join(word)), (x0, y0, x1, y1), size))
                word = []
        out.append(c)
        prev_end = float(bb[2])
        if space:
            if word:
                words.append(Token(unicodedata.normalize("NFC", "".join(word)), (x0, y0, x1, y1), size))
                word = []
            continue
        if word:
            y0, x1, y1 = min(y0, bb[1]), max(x1, bb[2]), max(y1, bb[3])
        else:
            x0, y0, x1, y1 = float(bb[0]), float(bb[1]), float(bb[2]), float(bb[3])
        word.append(c)
    if word:
        words.append(Token(unicodedata.normalize("NFC", "".join(word)), (x0, y0, x1, y1), size))
    return "".join(out), words


def _span(raw: dict[str, Any], words: list[Token] | None = None) -> Span | None:
    """A span of a `rawdict` line; its words (with boxes) are added to `words` when it is given."""
    chars = raw.get("chars")
    size = float(raw.get("size", 0.0))
    if chars is None:
        source = str(raw.get("text", ""))
    elif words is None:
        source = chars_text(chars, max(size, 1.0))
    else:
        source, found = chars_text_words(chars, max(size, 1.0))
        words.extend(found)
    text = unicodedata.normalize("NFC", source).translate(_DROP)
    if not text:
        return None
    font = str(raw.get("font", ""))
    lower = font.lower()
    flags = int(raw.get("flags", 0))
    stroked = int(raw.get("char_flags", 0)) & _FILL_AND_STROKE == _FILL_AND_STROKE
    bold = bool(flags & pymupdf.TEXT_FONT_BOLD) or any(n in lower for n in _BOLD_NAMES) or stroked
    italic = bool(flags & pymupdf.TEXT_FONT_ITALIC) or any(n in lower for n in _ITALIC_NAMES)
    x0, y0, x1, y1 = (float(v) for v in raw["bbox"])
    origin = raw.get("origin", (x0, y1))
    return Span(text=text, font=font, size=round(float(raw.get("size", 0.0)), 2), bold=bold, italic=italic,
                bbox=(x0, y0, x1, y1), baseline=float(origin[1]))


def _same_style(a: Span, b: Span) -> bool:
    return a.bold == b.bold and a.italic == b.italic and abs(a.size - b.size) < 0.3


def _merge_spans(spans: list[Span]) -> list[Span]:
    """Adjacent spans of one style become one; a span printed twice at the same place (fake bold) once."""
    out: list[Span] = []
    for span in spans:
        if out:
            prev = out[-1]
            if span.text == prev.text and abs(span.bbox[0] - prev.bbox[0]) < 1.0 \
                    and abs(span.bbox[1] - prev.bbox[1]) < 1.0:
                out[-1] = Span(prev.text, prev.font, prev.size, True, prev.italic, prev.bbox, prev.baseline)
                continue
            if _same_style(prev, span) and abs(span.baseline - prev.baseline) < 0.2 * prev.size:
                bbox = (min(prev.bbox[0], span.bbox[0]), min(prev.bbox[1], span.bbox[1]),
                        max(prev.bbox[2], span.bbox[2]), max(prev.bbox[3], span.bbox[3]))
                apart = span.bbox[0] - prev.bbox[2] > WORD_GAP * max(prev.size, 1.0)
                glue = " " if apart and not prev.text[-1:].isspace() and not span.text[:1].isspace() else ""
                out[-1] = Span(prev.text + glue + span.text, prev.font, prev.size, prev.bold, prev.italic,
                               bbox, prev.baseline)
                continue
        out.append(span)
    return out


def _line_pieces(raw_line: dict[str, Any], page: int, words: list[Token] | None = None) -> list[TextLine]:
    """A PyMuPDF line as one or more TextLines (split where spans are far apart); its words are added to
    `words` when it is given."""
    direction = raw_line.get("dir", (1.0, 0.0))
    if abs(float(direction[1])) > 0.2:  # vertical or rotated text: not body text
        return []
    spans = [s for s in (_span(r, words) for r in raw_line.get("spans", ())) if s is not None]
    groups: list[list[Span]] = []
    for span in spans:
        if groups and span.bbox[0] - groups[-1][-1].bbox[2] <= 1.2 * max(span.size, 1.0):
            groups[-1].append(span)
        else:
            groups.append([span])
    pieces: list[TextLine] = []
    for group in groups:
        merged = _merge_spans(group)
        if not "".join(s.text for s in merged).strip():
            continue
        bbox: BBox = (min(s.bbox[0] for s in merged), min(s.bbox[1] for s in merged),
                      max(s.bbox[2] for s in merged), max(s.bbox[3] for s in merged))
        pieces.append(TextLine(spans=merged, page=page, bbox=bbox))
    return pieces


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
    # Words with their boxes, on pages with rules: for the cells of grids and for tables ruled by lines only.
    words: list[Token] = []
    data = page.get_text("rawdict", flags=TEXT_FLAGS)  # characters: word gaps are checked (chars_text)
    lines: list[TextLine] = []
    for block in data.get("blocks", ()):
        if block.get("type", 0) != 0:
            continue
        for raw_line in block.get("lines", ()):
            lines.extend(_line_pieces(raw_line, number, words if horizontal else None))
    tables: list[TableRegion] = []
    if has_grid(horizontal, vertical):
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
    return RawPage(number, float(rect.width), float(rect.height), lines, free_rules, tables, words)


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


def layout_pages(raw_pages: list[RawPage], marks: tuple[str, ...] = DEFAULT_MARKS) -> ParsedDocument:
    """Whole-document steps on extracted pages: running lines, folios, tables, formulas, reading order."""
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
        text_tables = find_text_tables(raw.page, kept, _words_outside(raw.words, run_lines), raw.horizontal,
                                       find_gutter(kept, raw.width), carry)
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
        ordered, columns = order_lines(kept, raw.width)
        layouts.append(PageLayout(page=raw.page, width=raw.width, height=raw.height, lines=ordered,
                                  running=run_lines, tables=tables, folio=running.folios.get(raw.page),
                                  columns=columns, kept_edges=running.kept.get(raw.page, [])))
    return ParsedDocument(pages=layouts, page_map=page_map, body_size=body_size,
                          inferred=inferred_pages(running.folios, page_map))


def _words_outside(words: list[Token], furniture: list[TextLine]) -> list[Token]:
    """The words that are not part of the page furniture."""
    if not words or not furniture:
        return words
    boxes = [ln.bbox for ln in furniture]
    return [w for w in words if not any(b[1] - 1 <= w.cy <= b[3] + 1
                                        and b[0] - 1 <= (w.x0 + w.x1) / 2 <= b[2] + 1 for b in boxes)]


def parse_document(doc: pymupdf.Document, marks: tuple[str, ...] = DEFAULT_MARKS,
                   progress: PageProgress | None = None) -> ParsedDocument:
    """All pages of an open document. Raises PageError when a page cannot be loaded or read."""
    total = doc.page_count
    raw_pages: list[RawPage] = []
    for index in range(total):
        try:
            page = doc.load_page(index)
            raw_pages.append(extract_page(page, index + 1))
        except Exception as exc:  # PyMuPDF raises plain RuntimeError/ValueError subclasses
            raise PageError(index + 1, exc) from exc
        if progress is not None and (index + 1 == total or (index + 1) % 25 == 0):
            progress(index + 1, total)
    return layout_pages(raw_pages, marks)
