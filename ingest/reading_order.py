"""Reading order of one page: one or two columns, full-width elements, pieces of a line re-joined.

Pure: works on TextLine records, not on PyMuPDF objects.

* The gutter is found from x-coverage: the vertical strip in the middle half of the text area that (almost)
  no narrow line crosses, with text on both sides. No gutter -> one column.
* A line crossing the gutter (a title or table centred over both columns) is full width; it splits the page
  into bands, and each band is read left column top to bottom, then right column, then the full-width line.
* Pieces of a printed line on the same baseline in the same column (a wide justification gap, a superscript
  that PyMuPDF put in its own line) are merged back into one line, left to right.

Cost is linear in the number of lines plus the page width (a difference array), so a 1,668-page book is fine.
"""

from __future__ import annotations

from ingest.furniture import rows_of
from ingest.layout import Span, TextLine

FULL_WIDTH = -1


def find_gutter(lines: list[TextLine], page_width: float | None = None) -> float | None:
    """x of the gutter between two columns, or None for a one-column page. With `page_width`, the text
    area is taken to reach the mirrored left margin even when the right column is short."""
    if len(lines) < 4:
        return None
    left = min(line.x0 for line in lines)
    right = max(line.x1 for line in lines)
    if page_width is not None:
        right = max(right, page_width - left)
    width = right - left
    if width < 120:
        return None
    wide = [line for line in lines if line.x1 - line.x0 > 0.55 * width]
    narrow = [line for line in lines if line.x1 - line.x0 <= 0.55 * width]
    if len(wide) > 0.4 * len(lines) or len(narrow) < 4:
        return None
    origin = int(left)
    bins = int(right) - origin + 2
    diff = [0] * (bins + 1)
    for line in narrow:
        a = max(0, int(line.x0) - origin)
        b = min(bins, int(line.x1) - origin + 1)
        diff[a] += 1
        diff[b] -= 1
    coverage = [0] * (bins + 1)
    running = 0
    for x in range(bins + 1):
        running += diff[x]
        coverage[x] = running
    lo, hi = int(0.25 * width), int(0.75 * width)
    best = None
    for tolerance in (0, max(1, int(0.03 * len(narrow)))):
        best = _widest_low_run(coverage, lo, hi, tolerance, width / 2)
        if best is not None:
            break
    if best is None:
        return None
    gutter = origin + (best[0] + best[1]) / 2
    lefts = [line for line in narrow if line.x1 <= gutter]
    rights = [line for line in narrow if line.x0 >= gutter]
    if min(len(lefts), len(rights)) < 2:
        return None
    # The left column must reach towards the gutter (a ragged one-column list does not), and most of its
    # lines must be column lines, not the short cells of a rules-only table set in one-column text.
    if max(line.x1 for line in lefts) < left + 0.3 * width:
        return None
    # The right column starts at one x (indents and bullets aside); the cells of a rules-only table set in
    # one-column text start at several. Pieces of one printed line (a sparse justified line drawn word by
    # word) count once.
    segments = _line_segments(rights)
    start = min(segments)
    aligned = sum(1 for x0 in segments if x0 - start <= 0.05 * width)
    if aligned <= 0.5 * len(segments):
        return None
    return gutter


def _line_segments(lines: list[TextLine]) -> list[float]:
    """x0 of each run of pieces on one printed row whose gaps are narrower than 3 em (word gaps, even of
    a sparse justified line; not the white space between table cells)."""
    starts: list[float] = []
    for row in rows_of(lines):
        previous: TextLine | None = None
        for line in sorted(row, key=lambda ln: ln.x0):
            if previous is None or line.x0 - previous.x1 > 3.0 * max(line.size, 1.0):
                starts.append(line.x0)
            previous = line
    return starts


def _widest_low_run(coverage: list[int], lo: int, hi: int, tolerance: int,
                    centre: float) -> tuple[int, int] | None:
    """[start, end] of the widest run (>= 4 pt) of x in [lo, hi] covered by at most `tolerance` lines."""
    best: tuple[int, float, int, int] | None = None
    start = -1
    for x in range(lo, hi + 2):
        low = x <= hi and coverage[x] <= tolerance
        if low and start < 0:
            start = x
        elif not low and start >= 0:
            length, mid = x - start, (start + x - 1) / 2
            key = (length, -abs(mid - centre), start, x - 1)
            if length >= 4 and (best is None or key[:2] > best[:2]):
                best = key
            start = -1
    return (best[2], best[3]) if best else None


def merge_row(pieces: list[TextLine]) -> TextLine:
    """One line from pieces on the same baseline, left to right; a space where the pieces do not touch."""
    pieces = sorted(pieces, key=lambda p: p.x0)
    spans: list[Span] = []
    prev: TextLine | None = None
    for piece in pieces:
        if prev is not None:
            gap = piece.x0 - prev.x1
            joined = prev.text.endswith((" ", "\u00a0")) or piece.text.startswith((" ", "\u00a0"))
            if gap > 0.15 * max(prev.size, piece.size, 1.0) and not joined:
                spans.append(Span(" ", size=prev.size, bbox=(prev.x1, prev.y0, piece.x0, prev.y1),
                                  baseline=prev.spans[-1].baseline if prev.spans else 0.0))
        spans.extend(piece.spans)
        prev = piece
    first = pieces[0]
    bbox = (min(p.x0 for p in pieces), min(p.y0 for p in pieces),
            max(p.x1 for p in pieces), max(p.y1 for p in pieces))
    return TextLine(spans=spans, page=first.page, bbox=bbox, column=first.column,
                    visual=any(p.visual for p in pieces), table_id=first.table_id)


def _same_row(a: TextLine, b: TextLine) -> bool:
    """Pieces share a printed line when they overlap vertically by half the smaller one's height
    (a raised or lowered small span included) and do not overlap horizontally."""
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    apart = a.x1 <= b.x0 + 1.0 or b.x1 <= a.x0 + 1.0
    return apart and overlap >= 0.5 * min(a.height, b.height)


def group_rows(lines: list[TextLine]) -> list[TextLine]:
    """Lines of one column sorted top to bottom, pieces on the same baseline merged."""
    ordered = sorted(lines, key=lambda line: ((line.y0 + line.y1) / 2, line.x0))
    rows: list[list[TextLine]] = []
    for line in ordered:
        if rows and not line.table_id and not rows[-1][0].table_id:
            last = rows[-1]
            if any(_same_row(piece, line) for piece in last):
                last.append(line)
                continue
        rows.append([line])
    return [row[0] if len(row) == 1 else merge_row(row) for row in rows]


_FIND = object()


def order_lines(lines: list[TextLine], page_width: float | None = None,
                gutter: object = _FIND) -> tuple[list[TextLine], int]:
    """Lines of one page in reading order, and the number of columns found (1 or 2). `gutter`: what
    `find_gutter(lines, page_width)` returns, when the caller has it already."""
    if not lines:
        return [], 1
    if gutter is _FIND:
        gutter = find_gutter(lines, page_width)
    assert gutter is None or isinstance(gutter, float)
    if gutter is None:
        for line in lines:
            line.column = 0
        return group_rows(lines), 1
    full: list[TextLine] = []
    for line in lines:
        if line.x0 < gutter - 1.0 and line.x1 > gutter + 1.0:
            line.column = FULL_WIDTH
            full.append(line)
        else:
            line.column = 0 if (line.x0 + line.x1) / 2 < gutter else 1
    full_rows = group_rows(full)
    bounds = [(row.y0 + row.y1) / 2 for row in full_rows]
    bands: list[tuple[list[TextLine], list[TextLine]]] = [([], []) for _ in range(len(full_rows) + 1)]
    for line in lines:
        if line.column == FULL_WIDTH:
            continue
        centre = (line.y0 + line.y1) / 2
        band = sum(1 for b in bounds if b < centre)
        bands[band][line.column].append(line)
    ordered: list[TextLine] = []
    for index, (left, right) in enumerate(bands):
        ordered.extend(group_rows(left))
        ordered.extend(group_rows(right))
        if index < len(full_rows):
            ordered.append(full_rows[index])
    return ordered, 2
