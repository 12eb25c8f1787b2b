"""Page furniture (running headers and footers of any number of lines) found by what repeats across pages.

Pure: works on TextLine records. Per page, the text is grouped into rows (lines whose centres lie within half
a line of each other); the rows in the outer bands (`WIDE_BAND`), counted from the page edge inward, are the
candidates.

From each edge inward, the rows form *blocks*, each ending at a gap (at least 0.6 of a line height). Block
by block from the edge, a block is furniture when all its rows sit at *furniture slots* (heights, within
`SAME_Y`, where many pages hold a row: at least `max(3, 30%)` of the pages with text, and where on at least
80% of them that row is furniture) and either each of its rows looks like furniture by its text (small type,
a text repeated on many pages, the book mark, a page number) or the gap that ends it is the same on most
pages (a header is set at a fixed distance from the body, whatever its text). So a header of three lines (a
small book title above a line with the folio and the drug name, a chapter line), set close together or
apart, is furniture whatever its text, order or alignment, and so is a footer of two lines; the first body
line (same height on every page, but followed by the next body line, not by a gap) is not, nor is a short
paragraph set apart at the top of the body, nor the last lines of a column. The slots are settled by
iteration: a slot whose rows are not furniture is dropped, which may change others, until nothing changes.

Where this evidence finds nothing (a document of fewer than 3 pages, a page without the common furniture),
`ingest.running` falls back to rules on the row stack at the very edge of the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ingest.layout import TextLine

WIDE_BAND = 0.16  # fraction of the page height, top and bottom, where furniture slots are looked for
MAX_ROWS = 5  # rows counted from each edge
SAME_Y = 2.5  # pt: rows whose centres are this close on different pages sit at the same position
APART = 0.6  # x line height: a gap at least this tall cuts furniture off from the body
MIN_SHARE = 0.3  # a slot holds a row on at least this share of the pages with text (and on 3 pages)
CUT_OFF_SHARE = 0.8  # ... and the row is cut off from the body on at least this share of them


@dataclass
class EdgeRow:
    """One row of a page counted from the top (or bottom) edge inward, and the gap to the next row inward."""

    page: int
    where: str  # "top" | "bottom"
    index: int  # 0 = the row at the page edge
    lines: list[TextLine]
    gap: float  # to the next row inward (the page height when there is none)
    slot: int = -1  # furniture slot id once settled, -1 when the row is not at a slot

    @property
    def centre(self) -> float:
        return (min(ln.y0 for ln in self.lines) + max(ln.y1 for ln in self.lines)) / 2

    @property
    def height(self) -> float:
        return max(ln.height for ln in self.lines)

    @property
    def apart(self) -> bool:
        return self.gap >= APART * self.height

    @property
    def text(self) -> str:
        return " ".join(ln.text.strip() for ln in sorted(self.lines, key=lambda ln: ln.x0))


@dataclass
class PageEdges:
    page: int
    width: float
    height: float
    top: list[EdgeRow] = field(default_factory=list)
    bottom: list[EdgeRow] = field(default_factory=list)

    def side(self, where: str) -> list[EdgeRow]:
        return self.top if where == "top" else self.bottom


def rows_of(lines: Iterable[TextLine]) -> list[list[TextLine]]:
    """Lines grouped into printed rows, top to bottom (a line joins a row when its centre lies within half
    a line height of the row's first line)."""
    content = sorted((ln for ln in lines if ln.text.strip()), key=lambda ln: ((ln.y0 + ln.y1) / 2, ln.x0))
    rows: list[list[TextLine]] = []
    for line in content:
        centre = (line.y0 + line.y1) / 2
        if rows:
            first = rows[-1][0]
            if abs(centre - (first.y0 + first.y1) / 2) <= 0.5 * min(first.height, line.height):
                rows[-1].append(line)
                continue
        rows.append([line])
    return rows


def page_edges(page: int, width: float, height: float, lines: list[TextLine]) -> PageEdges:
    """The rows of the outer bands of one page, from each edge inward, with their gaps."""
    rows = rows_of(lines)
    edges = PageEdges(page, width, height)
    for where, ordered in (("top", rows), ("bottom", rows[::-1])):
        out = edges.side(where)
        for index, row in enumerate(ordered[:MAX_ROWS]):
            y0, y1 = min(ln.y0 for ln in row), max(ln.y1 for ln in row)
            inside = y1 <= WIDE_BAND * height if where == "top" else y0 >= (1 - WIDE_BAND) * height
            if not inside:
                break
            nxt = ordered[index + 1] if index + 1 < len(ordered) else None
            if nxt is None:
                gap = height
            elif where == "top":
                gap = min(ln.y0 for ln in nxt) - y1
            else:
                gap = y0 - max(ln.y1 for ln in nxt)
            out.append(EdgeRow(page, where, index, row, gap))
    if edges.top and edges.bottom and edges.top[-1].lines is edges.bottom[-1].lines:
        edges.bottom = [r for r in edges.bottom if not any(r.lines is t.lines for t in edges.top)]
    return edges


def _cluster(rows: list[EdgeRow]) -> list[list[EdgeRow]]:
    """Rows of many pages grouped by height (a group spans at most 2 x SAME_Y)."""
    groups: list[list[EdgeRow]] = []
    for row in sorted(rows, key=lambda r: r.centre):
        if groups and row.centre - groups[-1][0].centre <= 2 * SAME_Y:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


RowTest = Callable[[EdgeRow], bool]


def furniture_blocks(rows: list[EdgeRow], slots: set[int], furniture_like: RowTest,
                     steady: frozenset[int] | set[int] = frozenset()) -> int:
    """How many rows, from the page edge inward, are furniture: block by block (the rows up to a gap), while
    a block's rows all sit at furniture slots and either each looks like furniture by its text
    (`furniture_like`: small type, a text repeated on many pages, a page number) or the gap that ends it is
    the same on most pages (its last row's slot is `steady`: a header is set at a fixed distance from the
    body). So a short paragraph set apart at the top of the body, which ends at a different gap from page
    to page, never joins the header, nor do the last lines of a column at the foot of the page."""
    count = 0
    start = 0
    while start < len(rows):
        end = next((k for k in range(start, len(rows)) if rows[k].apart), None)
        if end is None:
            break
        block = rows[start: end + 1]
        if any(row.slot not in slots for row in block):
            break
        if not all(furniture_like(row) for row in block) and rows[end].slot not in steady:
            break
        count = end + 1
        start = end + 1
    return count


def settle_slots(pages: list[PageEdges], where: str, min_pages: int, furniture_like: RowTest
                 ) -> tuple[set[int], set[int]]:
    """Furniture slots of one side: ids of row groups (set on the rows as `slot`) that hold furniture, and
    the ids of the groups whose rows are followed by the same gap on most pages."""
    rows = [row for edges in pages for row in edges.side(where)]
    groups = _cluster(rows)
    slots: set[int] = set()
    for slot, group in enumerate(groups):
        for row in group:
            row.slot = slot
        if len({row.page for row in group}) >= min_pages:
            slots.add(slot)
    by_page = {edges.page: edges.side(where) for edges in pages}
    steady = {slot for slot, group in enumerate(groups) if _steady(group)}
    for _ in range(MAX_ROWS + 1):
        depth = {page: furniture_blocks(side, slots, furniture_like, steady)
                 for page, side in by_page.items()}
        keep: set[int] = set()
        for slot in slots:
            group = groups[slot]
            separated = {row.page for row in group if row.index < depth[row.page]}
            pages_there = {row.page for row in group}
            if len(separated) >= min_pages and len(separated) >= CUT_OFF_SHARE * len(pages_there):
                keep.add(slot)
        if keep == slots:
            break
        slots = keep
    return slots, steady


def _steady(group: list[EdgeRow]) -> bool:
    """The rows of a slot are followed by the same gap on CUT_OFF_SHARE of its pages."""
    gaps = sorted(row.gap for row in group)
    middle = gaps[len(gaps) // 2]
    return sum(1 for g in gaps if abs(g - middle) <= max(1.5, 0.1 * middle)) >= CUT_OFF_SHARE * len(gaps)


def furniture_rows(pages: list[PageEdges], furniture_like: RowTest) -> dict[int, list[EdgeRow]]:
    """Per page, its furniture rows found by evidence across pages (empty when the evidence is too thin)."""
    with_text = sum(1 for edges in pages if edges.top or edges.bottom)
    min_pages = max(3, int(MIN_SHARE * with_text + 0.999))
    found: dict[int, list[EdgeRow]] = {edges.page: [] for edges in pages}
    if with_text < 3:
        return found
    for where in ("top", "bottom"):
        slots, steady = settle_slots(pages, where, min_pages, furniture_like)
        for edges in pages:
            side = edges.side(where)
            found[edges.page].extend(side[: furniture_blocks(side, slots, furniture_like, steady)])
    return found
