"""Running headers/footers (page furniture), the folios printed in them, and the printed page map.

Furniture is found by evidence across pages (`ingest.furniture`): blocks of rows at the page edges, at
heights where many pages hold such a row, set off from the body by a gap, that look like furniture by their
text (small type, a text repeated on many pages, the book mark, a page number) or end at the same gap on most
pages; whatever their text and however many lines the header or footer has. Where that evidence finds
nothing on a side of a page, the row at the very edge (inside `BAND`) is furniture when:
  * it contains the book mark (default "DTQGVN"),
  * one of its pieces (digits ignored) repeats on many pages ("DƯỢC THƯ MẪU", "Trang #") and the row is
    set apart from the body by a gap,
  * it holds a bare page number (a piece that is only a number, optionally "Trang 12" / "- 12 -") and is
    set apart by a gap,
  * it is set apart by a gap, is smaller than body text, and is a header (top) or starts or ends with a
    number (a small bottom row without a number may be a footnote and is kept);
and so are the rows stacked on it up to the gap (a header of two lines on a page the evidence missed).

The folio is read from whichever furniture row carries a number that advances with the physical page: of a
page's candidates (a bare number, or one at the start or end of a row, after the book mark and its edition
number "DTQGVN 2" are removed; numbers printed on many pages, a year or an edition, never count), the one
whose offset (number - physical page) its neighbouring pages share wins; without such support, a bare number
before one inside words, then the one nearest the page's outer edge. Pages without a folio get one only by
interpolation between two neighbours with the same physical->printed offset, and a folio that disagrees with
both agreeing neighbours is replaced the same way (both are counted as inferred); nothing is extrapolated
(front matter stays without a printed page). Pure: works on TextLine records.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ingest.furniture import EdgeRow, PageEdges, furniture_rows, page_edges
from ingest.layout import TextLine
from rag_server.text import fold

DEFAULT_MARKS: tuple[str, ...] = ("DTQGVN",)
BAND = 0.11  # fraction of the page height searched for running rows, top and bottom
_BARE_NUMBER = re.compile(r"^(?:trang\s*)?[-–—(\[]?\s*(\d{1,4})\s*(?:(?:/|tren)\s*\d{1,4}\s*)?[-–—)\]]?$")
_EDGE_NUMBER = re.compile(r"^(\d{1,4})\b|\b(\d{1,4})$")
_DIGITS = re.compile(r"\d+")
FOLIO_WINDOW = 6  # pages on each side whose folio candidates support a page's choice


@dataclass
class RunningRow:
    page: int
    where: str  # "top" | "bottom"
    lines: list[TextLine]
    gap: float  # distance to the nearest body line
    page_width: float

    @property
    def text(self) -> str:
        return " ".join(line.text.strip() for line in sorted(self.lines, key=lambda line: line.x0))


@dataclass
class RunningResult:
    """Per physical page: ids (positions in the page's line list) of running lines, and the folio."""

    removed: dict[int, set[int]] = field(default_factory=dict)
    folios: dict[int, int | None] = field(default_factory=dict)
    rows: dict[int, list[str]] = field(default_factory=dict)  # page -> texts of its running rows
    kept: dict[int, list[str]] = field(default_factory=dict)  # page -> texts of edge rows left in the body


def signature(text: str) -> str:
    return _DIGITS.sub("#", fold(text))


def _mark_pattern(marks: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(fold(mark)) for mark in marks) or "(?!)"
    return re.compile(rf"(?:{alternatives})(?:\s*\d{{1,2}}\b)?")


def folio_candidates(row: RunningRow,
                     marks: tuple[str, ...] = DEFAULT_MARKS) -> list[tuple[bool, float, int]]:
    """(embedded in words, distance to the page's outer edge, number) of each page-number candidate."""
    pattern = _mark_pattern(marks)
    candidates: list[tuple[bool, float, int]] = []
    pieces = sorted(row.lines, key=lambda line: line.x0)
    for index, piece in enumerate(pieces):
        text = pattern.sub(" ", fold(piece.text)).strip()
        if not text:
            continue
        bare = _BARE_NUMBER.match(text)
        numbers: list[int] = []
        if bare:
            numbers.append(int(bare.group(1)))
        else:
            words = text.split()
            if index == 0 and words[0].isdigit() and len(words[0]) <= 4:
                numbers.append(int(words[0]))
            if index == len(pieces) - 1 and words[-1].isdigit() and len(words[-1]) <= 4:
                numbers.append(int(words[-1]))
        for number in numbers:
            if number >= 1:
                edge = min(piece.x0, row.page_width - piece.x1)
                candidates.append((not bare, edge, number))
    return candidates


def folio_of(row: RunningRow, marks: tuple[str, ...] = DEFAULT_MARKS,
             constant: frozenset[int] = frozenset()) -> int | None:
    """The printed page number of a running row: a bare number before one inside words ("Dược thư 2018"),
    then the one nearest the page's outer edge; numbers in `constant` (the same on many pages: a year, an
    edition) are never folios."""
    candidates = [c for c in folio_candidates(row, marks) if c[2] not in constant]
    return min(candidates)[2] if candidates else None


def _apart(row: RunningRow) -> bool:
    return row.gap >= 0.6 * max(line.height for line in row.lines)


def _is_running(row: RunningRow, repeated: set[str], body_size: float, marks: tuple[str, ...]) -> bool:
    folded = fold(row.text)
    if any(fold(mark) in folded for mark in marks):
        return True
    if not _apart(row):
        return False
    if any(signature(line.text) in repeated for line in row.lines):
        return True
    pattern = _mark_pattern(marks)
    if any(_BARE_NUMBER.match(pattern.sub(" ", fold(line.text)).strip()) for line in row.lines):
        return True
    small = all(line.size < 0.92 * body_size for line in row.lines)
    # A small line set apart at the top is a header even without a number (the folio may be in the footer);
    # at the bottom it could be a footnote, so there a number is required.
    return small and (row.where == "top" or bool(_EDGE_NUMBER.search(folded)))


def _edge_stack(side: list[EdgeRow], height: float, width: float) -> list[RunningRow]:
    """The rows at a page edge up to the first gap (at most 3, the outermost inside BAND), each with the
    gap that cuts the stack off from the body; empty when the edge row lies outside BAND."""
    if not side:
        return []
    edge = side[0]
    y0, y1 = min(ln.y0 for ln in edge.lines), max(ln.y1 for ln in edge.lines)
    if (edge.where == "top" and y1 > BAND * height) or (edge.where == "bottom" and y0 < (1 - BAND) * height):
        return []
    stack: list[EdgeRow] = []
    for row in side[:3]:
        stack.append(row)
        if row.apart:
            break
    gap = stack[-1].gap if stack[-1].apart or len(stack) == 1 else 0.0
    return [RunningRow(row.page, row.where, row.lines, gap, width) for row in stack]


def _fallback(edges: PageEdges, where: str, repeated: set[str], body_size: float,
              marks: tuple[str, ...]) -> list[RunningRow]:
    stack = _edge_stack(edges.side(where), edges.height, edges.width)
    if not stack or not _is_running(stack[0], repeated, body_size, marks):
        return []
    return [stack[0], *(row for row in stack[1:] if _is_running(row, repeated, body_size, marks))]


def repeated_signatures(edges: list[PageEdges], depth: int, threshold: int) -> set[str]:
    """Signatures (digits masked) of the lines among the `depth` rows at each page edge that recur on
    `threshold` pages or more."""
    counts: Counter[str] = Counter()
    for page_rows in edges:
        seen: set[str] = set()
        for row in page_rows.top[:depth] + page_rows.bottom[:depth]:
            for line in row.lines:
                sig = signature(line.text)
                if sig.strip("# "):
                    seen.add(sig)
        counts.update(seen)
    return {sig for sig, n in counts.items() if n >= threshold}


def choose_folio(page: int, candidates: list[tuple[bool, float, int]],
                 neighbours: list[tuple[int, list[tuple[bool, float, int]]]]) -> int | None:
    """The candidate whose offset (number - page) most neighbouring pages share (a number advancing with
    the physical page); ties, and a page without such support, by the candidate's own rank."""
    if not candidates:
        return None

    def support(number: int) -> int:
        offset = number - page
        return sum(1 for other, theirs in neighbours if any(c[2] - other == offset for c in theirs))

    return min(candidates, key=lambda c: (-support(c[2]), c))[2]


def detect_running(
    pages: list[tuple[int, float, float, list[TextLine]]],
    body_size: float,
    marks: tuple[str, ...] = DEFAULT_MARKS,
) -> RunningResult:
    """pages: (physical page, width, height, lines). Returns the running lines to drop and the folios."""
    edges = [page_edges(page, width, height, lines) for page, width, height, lines in pages]
    pages_with_rows = sum(1 for page_rows in edges if page_rows.top or page_rows.bottom)
    threshold = max(3, int(0.25 * pages_with_rows))
    repeated = repeated_signatures(edges, 1, threshold)  # texts of the rows at the very edges
    repeated_near = repeated_signatures(edges, 3, threshold)  # ... and of those next to them
    pattern = _mark_pattern(marks)

    def furniture_like(row: EdgeRow) -> bool:
        """Small type, a repeated text, the book mark or a page number: a header line set apart from the
        header line next to it."""
        if all(line.size < 0.92 * body_size for line in row.lines):
            return True
        folded = [pattern.sub(" ", fold(line.text)).strip() for line in row.lines]
        return any(signature(line.text) in repeated_near for line in row.lines) \
            or any(fold(mark) in fold(row.text) for mark in marks) \
            or any(_BARE_NUMBER.match(text) or _EDGE_NUMBER.search(text) for text in folded)

    evidence = furniture_rows(edges, furniture_like)
    running: dict[int, list[RunningRow]] = {}
    for page_rows in edges:
        found = evidence[page_rows.page]
        rows: list[RunningRow] = []
        for where in ("top", "bottom"):
            side = [row for row in found if row.where == where]
            if side:
                rows.extend(RunningRow(row.page, where, row.lines, row.gap, page_rows.width) for row in side)
            else:
                rows.extend(_fallback(page_rows, where, repeated, body_size, marks))
        running[page_rows.page] = rows
    # A number printed on many pages (a year, an edition) is not a page number.
    numbers: Counter[int] = Counter()
    for rows in running.values():
        numbers.update({c[2] for row in rows for c in folio_candidates(row, marks)})
    constant = frozenset(n for n, k in numbers.items() if k >= max(3, 0.3 * pages_with_rows))
    candidates = {page: [c for row in rows for c in folio_candidates(row, marks) if c[2] not in constant]
                  for page, rows in running.items()}
    order = sorted(candidates)
    position = {page: at for at, page in enumerate(order)}
    by_page = {page_rows.page: page_rows for page_rows in edges}
    result = RunningResult()
    for page, _width, _height, lines in pages:
        index = {id(line): i for i, line in enumerate(lines)}
        dropped = {id(line) for row in running[page] for line in row.lines}
        result.removed[page] = {index[key] for key in dropped}
        at = position[page]
        nearby = order[max(0, at - FOLIO_WINDOW): at] + order[at + 1: at + 1 + FOLIO_WINDOW]
        result.folios[page] = choose_folio(page, candidates[page], [(q, candidates[q]) for q in nearby])
        result.rows[page] = [row.text for row in running[page]]
        edge = by_page[page].top[:2] + by_page[page].bottom[:2]
        result.kept[page] = [f"{row.where}: {row.text}" for row in edge
                             if not any(id(line) in dropped for line in row.lines)]
    return result


def build_page_map(folios: dict[int, int | None]) -> dict[int, int | None]:
    """physical -> printed. A folio that disagrees with both neighbours (which agree) is dropped as a misread;
    a missing folio is interpolated only between two anchors with the same offset."""
    pages = sorted(folios)
    offsets = {p: f - p for p, f in folios.items() if f is not None}
    anchored = sorted(offsets)
    clean: dict[int, int] = {}
    for i, p in enumerate(anchored):
        prev_off = offsets[anchored[i - 1]] if i > 0 else None
        next_off = offsets[anchored[i + 1]] if i + 1 < len(anchored) else None
        if prev_off is not None and prev_off == next_off and offsets[p] != prev_off:
            continue
        clean[p] = offsets[p]
    result: dict[int, int | None] = {}
    anchors = sorted(clean)
    j = 0
    for p in pages:
        if p in clean:
            result[p] = p + clean[p]
            continue
        while j < len(anchors) and anchors[j] < p:
            j += 1
        before = anchors[j - 1] if j > 0 else None
        after = anchors[j] if j < len(anchors) else None
        if before is not None and after is not None and clean[before] == clean[after]:
            result[p] = p + clean[before]
        else:
            result[p] = None
    return result


def inferred_pages(folios: dict[int, int | None], page_map: dict[int, int | None]) -> list[int]:
    """Pages whose printed page was inferred from their neighbours: no folio was read there, or the one read
    disagreed with both (agreeing) neighbours."""
    return sorted(p for p, printed in page_map.items() if printed is not None and folios.get(p) != printed)
