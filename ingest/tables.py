"""Tables without a grid: ruled by horizontal lines only, or not ruled at all but set in aligned columns.

Pure: works on tokens (words or line pieces with their boxes), TextLine records and rule segments. Fully
ruled tables (a grid) are PyMuPDF's (`page.find_tables()`, see parse.py); these are the others.

* Columns are the x-ranges the tokens of a region cover once their x-intervals are merged across gaps
  narrower than a *river* (0.4 em with rules, 1 em without): a column gap is white space that no token of
  any row of the region crosses. Prose has no such river: its word gaps are narrower and do not line up.
  A header (its lines above the rule under it, or up to 3 lines) may bridge a river the rows below it keep
  (bold text set in columns measured for regular text).
* Horizontal-rule tables: rules of the same extent (x0 and x1 within 3 pt) inside the body (not a header or
  footer rule) and stacked on one another seed a region: top, header and bottom rules; a rule under every
  row; top and bottom only. The bands between two rules join while they keep one set of columns (the first
  band is the header); a band that does not (a line of prose between two tables) or an empty one splits
  them; 2 lines with text in two columns make a table. Past its outer rule a region takes the rows up to
  the end of the column only if all of them continue it (a table broken by a column or page end has a rule
  on one side only); a single rule does the same on one side (1 such line is enough there). Rows set in
  another type size (a title, a heading) never continue a table.
* Unruled tables: within one column of the page, a run of rows each made of two or more pieces set at
  least 1 em apart whose inner cells start where the run's do (single-piece rows inside the run: a wrapped
  cell; after it only as the wrapped end of a cell), with 3 such rows, whose columns are aligned (most
  cells start, end or are centred at the column's edges). A table that runs to the end of a column goes on
  at the top of the next one (on the same page or the next) with rows laid out alike: there 1 row is enough.
* Never a table: a region whose only column gap is the page's gutter (the two columns of prose), an unruled
  run whose rows mostly run edge to edge with even gaps (sparse lines of justified prose), one where
  every column is a text measure wide (15 em) and filled like prose (most rows reach across 80% of it),
  a column holding text in fewer than 2 rows (1 for the broken part of a table).
Rows: a rule between two text lines ends a row; so does a gap clearly taller than the tightest one (rows
set apart, lines of a wrapped cell close); with even spacing, a line whose first cell is empty continues the
row above. Cells read top to bottom, rows in reading order.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ingest.layout import BBox, TableRegion, TextLine

Segment = tuple[float, float, float, float]

RULED_RIVER = 0.4  # em: a column gap between ruled rows
UNRULED_RIVER = 1.0  # em: a column gap between unruled rows (word gaps, even justified, are narrower)
SAME_EXTENT = 3.0  # pt: rules whose ends are this close belong to one table
MIN_RULE = 30.0  # pt: shorter rules are underlines or fraction bars
TALL_ROW = 40.0  # em: the most rows between two rules of one table may measure
PROSE_FILL = 0.8  # a column whose lines mostly reach across this share of it is set like prose ...
PROSE_MEASURE = 15.0  # ... when it is at least this many em wide
SAME_SIZE = 0.08  # relative difference of type size within which a row may belong to a table
HEADER_LINES = 6  # lines a header band (above the rule under the header) may have
HEADER_ROWS = 6  # lines of a header row that may bridge a column gap of the rows below
BODY_SLACK = 6.0  # pt: rules this far above or below the body text still belong to it (a table's top rule)
JUSTIFIED = 0.6  # share of rows set edge to edge with even gaps that makes a run justified prose
ALIGNED = 0.6  # share of a column's cells that start (or end) at its edge, in an unruled table


class Token(NamedTuple):
    """A word (or a line piece) with its box: a named tuple, as there are many."""

    text: str
    bbox: BBox
    size: float

    @property
    def x0(self) -> float:
        return self.bbox[0]

    @property
    def x1(self) -> float:
        return self.bbox[2]

    @property
    def cy(self) -> float:
        return (self.bbox[1] + self.bbox[3]) / 2

    @property
    def height(self) -> float:
        return max(0.1, self.bbox[3] - self.bbox[1])


@dataclass
class TextTable:
    bbox: BBox
    rows: list[list[str]]
    columns: list[tuple[float, float]]


def tokens_of(lines: Sequence[TextLine]) -> list[Token]:
    return [Token(" ".join(ln.text.split()), ln.bbox, ln.size) for ln in lines if ln.text.strip()]


# --- geometry ------------------------------------------------------------------------------------------


def visual_rows(tokens: Sequence[Token]) -> list[list[Token]]:
    """Tokens grouped into printed lines, top to bottom, each left to right."""
    rows: list[list[Token]] = []
    for token in sorted(tokens, key=lambda t: (t.cy, t.x0)):
        if rows:
            first = rows[-1][0]
            if abs(token.cy - first.cy) <= 0.5 * min(first.height, token.height):
                rows[-1].append(token)
                continue
        rows.append([token])
    return [sorted(row, key=lambda t: t.x0) for row in rows]


def columns_of(tokens: Sequence[Token], river: float) -> list[tuple[float, float]]:
    """x-ranges covered by tokens once gaps narrower than `river` are bridged."""
    out: list[tuple[float, float]] = []
    for token in sorted(tokens, key=lambda t: t.x0):
        if out and token.x0 - out[-1][1] < river:
            out[-1] = (out[-1][0], max(out[-1][1], token.x1))
        else:
            out.append((token.x0, token.x1))
    return out


def grid_of(rows: Sequence[list[Token]], river: float, header: int = 0) -> list[tuple[float, float]]:
    """The columns of a table's rows: the x-ranges between rivers. A header (up to HEADER_ROWS lines, or
    the `header` lines known to be one: those above the rule under it) may bridge a river the rows below
    it keep (bold text set in columns measured for regular text): then the rivers are those of the rows
    below it, and the header's cells are read into those columns."""
    best = columns_of([t for r in rows for t in r], river)
    skips = set(range(1, min(HEADER_ROWS, len(rows) - 2) + 1))
    if 0 < header < len(rows):
        skips.add(header)
    for skip in sorted(skips):
        body = columns_of([t for r in rows[skip:] for t in r], river)
        if len(body) > len(best):
            best = body
    return best


def _em(tokens: Sequence[Token]) -> float:
    return statistics.median(t.size for t in tokens) if tokens else 10.0


def _column(columns: list[tuple[float, float]], token: Token) -> int:
    """The last column starting left of the token's centre (a header cell bridging a gap is read into the
    column it starts over)."""
    centre = (token.x0 + token.x1) / 2
    found = 0
    for j, (a, _b) in enumerate(columns):
        if a <= centre + 0.5:
            found = j
    return found


# --- rows and cells ------------------------------------------------------------------------------------


def table_rows(lines: list[list[Token]], columns: list[tuple[float, float]], rules: Sequence[float]
               ) -> list[list[str]]:
    """Cells (text per column) of each table row; `lines` are the visual rows of the table, top to bottom,
    `rules` the heights of horizontal rules inside it."""
    if not lines:
        return []
    gaps = [min(t.bbox[1] for t in b) - max(t.bbox[3] for t in a) for a, b in itertools.pairwise(lines)]
    em = _em([t for line in lines for t in line])
    tight = min(gaps) if gaps else 0.0
    spread = max(gaps) - tight if gaps else 0.0
    groups: list[list[list[Token]]] = [[lines[0]]]
    for k, line in enumerate(lines[1:]):
        above, gap = lines[k], gaps[k]
        bottom = max(t.bbox[3] for t in above)
        top = min(t.bbox[1] for t in line)
        ruled = any(bottom - 1.0 <= y <= top + 1.0 for y in rules)
        if spread > 0.25 * em:
            new = ruled or gap > tight + 0.5 * spread
        else:
            new = ruled or _column(columns, line[0]) == 0
        if new:
            groups.append([line])
        else:
            groups[-1].append(line)
    rows: list[list[str]] = []
    for group in groups:
        cells: list[list[str]] = [[] for _ in columns]
        for line in group:
            for token in line:
                cells[_column(columns, token)].append(token.text)
        rows.append([" ".join(" ".join(c).split()) for c in cells])
    return rows


# --- validation ----------------------------------------------------------------------------------------


def _prose_like(columns: list[tuple[float, float]], rows: Sequence[list[Token]], em: float) -> bool:
    """Columns of running text, not of cells (the two columns of a page whose gutter was not found): every
    column is a text measure wide (PROSE_MEASURE em) and in most rows its text reaches across PROSE_FILL
    of it."""
    for j, (a, b) in enumerate(columns):
        width = max(1.0, b - a)
        fills = []
        for row in rows:
            cell = [t for t in row if _column(columns, t) == j]
            if cell:
                fills.append((max(t.x1 for t in cell) - min(t.x0 for t in cell)) / width)
        if width < PROSE_MEASURE * em or not fills or statistics.median(fills) < PROSE_FILL:
            return False
    return True


def _justified_column(columns: list[tuple[float, float]], rows: Sequence[list[Token]], em: float) -> bool:
    """One column is a column of justified prose: a text measure wide, and most of its cells run from its
    left edge to its right edge (the page's two columns read as one when its gutter was not found)."""
    for j, (a, b) in enumerate(columns):
        cells = [[t for t in row if _column(columns, t) == j] for row in rows]
        cells = [c for c in cells if c]
        if b - a < PROSE_MEASURE * em or len(cells) < 3:
            continue
        full = sum(1 for c in cells if c[0].x0 - a <= 1.0 and b - c[-1].x1 <= 1.0)
        if full >= JUSTIFIED * len(cells):
            return True
    return False


def _justified(rows: Sequence[list[Token]], band: Sequence[TextLine]) -> bool:
    """Most rows of three pieces or more are lines of justified prose: they run from the column's left edge
    to its right edge with even gaps (a sparse line drawn word by word splits into pieces at its wide, equal
    gaps)."""
    left, right = min(ln.x0 for ln in band), max(ln.x1 for ln in band)
    multi = [r for r in rows if len(r) >= 3]  # two gaps at least: two cells ending flush are no evidence
    even = 0
    for row in multi:
        gaps = [b.x0 - a.x1 for a, b in itertools.pairwise(row)]
        if abs(row[0].x0 - left) <= 1.0 and abs(row[-1].x1 - right) <= 1.0 and max(gaps) - min(gaps) <= 1.0:
            even += 1
    return bool(multi) and even >= JUSTIFIED * len(multi)


def _only_gutter(columns: list[tuple[float, float]], gutter: float | None) -> bool:
    if gutter is None or len(columns) != 2:
        return False
    return columns[0][1] <= gutter <= columns[1][0]


def _aligned(columns: list[tuple[float, float]], lines: list[list[Token]], tolerance: float) -> bool:
    """In every column, most cells start at its left edge or end at its right edge (or are centred)."""
    for j, (a, b) in enumerate(columns):
        cells = [[t for t in line if _column(columns, t) == j] for line in lines]
        cells = [c for c in cells if c]
        if not cells:
            return False
        starts = sum(1 for c in cells if abs(c[0].x0 - a) <= tolerance)
        ends = sum(1 for c in cells if abs(c[-1].x1 - b) <= tolerance)
        centred = sum(1 for c in cells if abs((c[0].x0 + c[-1].x1) / 2 - (a + b) / 2) <= tolerance)
        if max(starts, ends, centred) < ALIGNED * len(cells):
            return False
    return True


def _valid(columns: list[tuple[float, float]], lines: list[list[Token]], min_rows: int,
           min_filled: int = 2) -> bool:
    """At least two columns, each holding text in `min_filled` lines, and `min_rows` lines with text in
    two columns or more."""
    if len(columns) < 2:
        return False
    filled = [sum(1 for line in lines if any(_column(columns, t) == j for t in line))
              for j in range(len(columns))]
    multi = sum(1 for line in lines if len({_column(columns, t) for t in line}) >= 2)
    return min(filled) >= min_filled and multi >= min_rows


# --- horizontal-rule tables ----------------------------------------------------------------------------


def merge_rules(rules: Sequence[Segment]) -> list[Segment]:
    """Collinear pieces of one rule (a cell border drawn per cell) joined; short rules dropped."""
    out: list[Segment] = []
    for x0, y, x1, _ in sorted(rules, key=lambda r: (round(r[1], 0), r[0])):
        if out and abs(out[-1][1] - y) <= 0.8 and x0 - out[-1][2] <= 2.0:
            prev = out[-1]
            out[-1] = (prev[0], prev[1], max(prev[2], x1), prev[3])
        else:
            out.append((x0, y, x1, y))
    return [r for r in out if r[2] - r[0] >= MIN_RULE]


def rule_groups(rules: Sequence[Segment], em: float) -> list[list[Segment]]:
    """Rules of one extent stacked no more than a tall row apart, top to bottom."""
    groups: list[list[Segment]] = []
    for rule in sorted(rules, key=lambda r: r[1]):
        for group in groups:
            last = group[-1]
            if abs(last[0] - rule[0]) <= SAME_EXTENT and abs(last[2] - rule[2]) <= SAME_EXTENT \
                    and rule[1] - last[1] <= TALL_ROW * em:
                group.append(rule)
                break
        else:
            groups.append([rule])
    return groups


def _rows_in(tokens: Sequence[Token], x0: float, x1: float) -> list[list[Token]]:
    return visual_rows([t for t in tokens if t.x1 > x0 - 1 and t.x0 < x1 + 1])


def _gap(upper: list[Token], lower: list[Token]) -> float:
    return min(t.bbox[1] for t in lower) - max(t.bbox[3] for t in upper)


def _count(rows: Sequence[list[Token]], river: float) -> int:
    return len(grid_of(rows, river))


def _same_size(rows: list[list[Token]], row: list[Token]) -> bool:
    """A row set in the table's type size (a title or heading next to a table is larger)."""
    size = _em([t for r in rows for t in r])
    return abs(_em(row) - size) <= SAME_SIZE * size


def _continues(now: int, joined: int, rows: int) -> bool:
    """Rows joined to a table keep its columns; a short start (a header that bridged a column gap) may
    gain columns from them."""
    return (now >= 2 and joined == now) or (joined >= 2 and joined > now and rows <= HEADER_ROWS)


def _grow(rows: list[list[Token]], outward: list[list[Token]], downward: bool, x0: float, x1: float,
          river: float, limit_gap: float) -> list[list[Token]]:
    """The rows of `outward` (nearest first) that continue the table: inside its width, in its type size,
    close to it, and keeping its number of columns. While it has fewer than two columns (a seed row that is
    the wrapped end of a cell), up to 3 rows are taken on trust, unless one fills the width like prose."""
    taken: list[list[Token]] = []
    trusted = 0
    for row in outward:
        current = [*rows, *taken] if downward else [*taken[::-1], *rows]
        if any(t.x0 < x0 - 2 or t.x1 > x1 + 2 for t in row) or not _same_size(current, row):
            break
        if (_gap(current[-1], row) if downward else _gap(row, current[0])) > limit_gap:
            break
        now, joined = _count(current, river), _count([*current, row], river)
        if now >= 2 and not _continues(now, joined, len(current)):
            break
        if now < 2 and joined < 2:
            trusted += 1
            if trusted > 3 or max(t.x1 for t in row) - min(t.x0 for t in row) > 0.85 * (x1 - x0):
                break
        taken.append(row)
    return taken


def _parts(bands: list[list[list[Token]]], river: float) -> list[tuple[int, int]]:
    """Runs [first, last] of consecutive bands (the rows between two rules) that share one set of columns;
    an empty band, or one that does not keep to its neighbours' columns (a line of prose between two
    tables), separates them. The first band of a run is its header: the columns are those of the bands
    after it (a bold header may bridge their gaps)."""
    parts: list[tuple[int, int]] = []
    start = -1
    for i, band in enumerate(bands):
        if start >= 0 and band:
            body = [r for b in bands[start + 1: i] for r in b]
            now = _count(body or bands[start], river)
            joined = _count([*body, *band], river)
            header_ok = bool(body) or _header_fits(bands[start], grid_of(band, river))
            if joined >= 2 and (joined == now or not body) and header_ok \
                    and _in_cells(grid_of([*body, *band], river), band):
                continue
            parts.append((start, i - 1))
            start = -1
        if band:
            start = i
        elif start >= 0:
            parts.append((start, i - 1))
            start = -1
    if start >= 0:
        parts.append((start, len(bands) - 1))
    return parts


def _header_fits(rows: list[list[Token]], columns: list[tuple[float, float]]) -> bool:
    """A band can head the columns below it: a few lines (HEADER_LINES) with text over two columns or more,
    few of whose words run across a column start (a bold cell may overflow a little; the lines of a
    paragraph run across all of them)."""
    words = [t for r in rows for t in r]
    across = sum(1 for t in words if any(t.x0 < a - 1.0 and t.x1 > a + 1.0 for a, _ in columns[1:]))
    heads = {_column(columns, t) for t in words}  # a header names two columns or more
    return len(rows) <= HEADER_LINES and across <= 0.25 * len(words) and len(heads) >= 2


def _in_cells(columns: list[tuple[float, float]], band: list[list[Token]]) -> bool:
    """A band of rows fills two cells or more, or only cells right of the first (a wrapped cell, an empty
    first cell); a line of text in the first column alone is prose between two tables."""
    used = {_column(columns, t) for r in band for t in r}
    return len(used) >= 2 or 0 not in used


def _extend(rows: list[list[Token]], outward: list[list[Token]], downward: bool, x0: float, x1: float,
            river: float, em: float, rule: float, pad: float) -> list[list[Token]]:
    """Rows beyond a ruled region's outer rule (at `rule`), taken only when the first sits as close to the
    rule as the table's cells sit to theirs (`pad`) and all of them, up to the end of the column, continue
    the table (it was broken there, so that side has no rule)."""
    if not outward:
        return []
    first = outward[0]
    distance = min(t.bbox[1] for t in first) - rule if downward else rule - max(t.bbox[3] for t in first)
    if distance > pad + 1.5:
        return []
    taken = _grow(rows, outward, downward, x0, x1, river, 2.5 * em)
    return taken if len(taken) == len(outward) else []


def body_rules(rules: Sequence[Segment], body: tuple[float, float]) -> list[Segment]:
    """The rules inside `body` (the y-range of the body text): a header or footer rule seeds no table."""
    return [r for r in merge_rules(rules) if body[0] - BODY_SLACK <= r[1] <= body[1] + BODY_SLACK]


def ruled_tables(tokens: Sequence[Token], rules: Sequence[Segment], gutter: float | None,
                 body: tuple[float, float]) -> list[TextTable]:
    """Tables marked by horizontal rules only. `tokens`: the words of the page (pieces if no words);
    `body`: the y-range of the body text (rules outside it, a header or footer rule, seed nothing)."""
    usable = body_rules(rules, body)
    tables: list[TextTable] = []
    for group in rule_groups(usable, _em(tokens)):
        x0, x1 = min(r[0] for r in group), max(r[2] for r in group)
        ys = [r[1] for r in group]
        rows = _rows_in(tokens, x0, x1)
        near = [t for r in rows for t in r if ys[0] - 3 * t.size <= t.cy <= ys[-1] + 3 * t.size]
        em = _em(near)
        river = max(2.5, RULED_RIVER * em)
        bands = [[r for r in rows if a < r[0].cy < b] for a, b in itertools.pairwise(ys)]
        spans = [(ys[first], ys[last + 1], [r for b in bands[first: last + 1] for r in b],
                  len(bands[first]) if last > first else 0) for first, last in _parts(bands, river)]
        if not spans:  # a single rule (or rules with nothing between): the table lies on one side
            spans = [(y, y, [], 0) for y in dict.fromkeys((ys[0], ys[-1]))]
        for top, bottom, inner, header in spans:
            table = _ruled_table(inner, rows, (top, bottom), (x0, x1), river, em, ys, gutter, header)
            if table is not None:
                tables.append(table)
    return _distinct(tables)


def _ruled_table(inner: list[list[Token]], rows: list[list[Token]], span: tuple[float, float],
                 extent: tuple[float, float], river: float, em: float, ys: list[float],
                 gutter: float | None, header: int = 0) -> TextTable | None:
    """The table between two rules (`inner` rows, possibly grown past them) or beside one rule."""
    (top, bottom), (x0, x1) = span, extent
    before = [r for r in rows if r[0].cy <= top]
    after = [r for r in rows if r[0].cy >= bottom]
    if inner:
        pad = _padding(inner, [y for y in ys if top <= y <= bottom])
        above = _extend(inner, before[::-1], False, x0, x1, river, em, top, pad)[::-1]
        grown = [*above, *inner, *_extend(inner, after, True, x0, x1, river, em, bottom, pad)]
        header = header + len(above) if header else 0
        # Rows of one column between two rules (a line of prose, a caption) seed a table only as the
        # header of the rows that go on below them (a table broken under its header rule).
        if len(grid_of(inner, river, header)) < 2:
            if above or not _header_fits(inner, grid_of(grown, river, len(inner))):
                return None
            header = len(inner)
    else:  # one rule: the rows on one side of it, up to the end of the column, are the (broken) table
        pad = 0.6 * em
        below = [*after[:1], *_extend(after[:1], after[1:], True, x0, x1, river, em, -1e9, 1e9)] \
            if after and _near(after[0], top, pad) else []
        above = [*_extend(before[-1:], before[:-1][::-1], False, x0, x1, river, em, 1e9, 1e9)[::-1],
                 *before[-1:]] if before and _near(before[-1], top, pad) else []
        if below and len(below) == len(after):
            grown = below
        else:
            grown = above if above and len(above) == len(before) else []
    if not grown:
        return None
    flat = [t for r in grown for t in r]
    columns = grid_of(grown, river, header)
    # Between two rules: 2 rows with two cells; the broken part of a table beside a single rule, which
    # runs to the end of the column and spans most of the rule: 1 such row.
    spanned = max(t.x1 for t in flat) - min(t.x0 for t in flat) >= 0.6 * (x1 - x0)
    if not _valid(columns, grown, 2 if inner else 1, 2 if inner else 1) or (not inner and not spanned):
        return None
    # The page's two columns of prose between two rules: its only column gap is the gutter and it reads
    # like prose (a table across the page whose column gap falls on the gutter has a column of short cells).
    prose = _prose_like(columns, grown, em)
    if (not inner and (prose or _only_gutter(columns, gutter))) or (_only_gutter(columns, gutter) and prose):
        return None
    low, high = min(t.bbox[1] for t in flat), max(t.bbox[3] for t in flat)
    box: BBox = (x0, min(top, low), x1, max(bottom, high))
    inner_rules = [y for y in ys if box[1] - 1 <= y <= box[3] + 1]
    return TextTable(box, table_rows(grown, columns, inner_rules), columns)


def _padding(rows: list[list[Token]], rules: list[float]) -> float:
    """The largest distance between a rule of the region and the text line next to it (the cell padding)."""
    out = 0.0
    for y in rules:
        distances = [d for r in rows for d in (min(t.bbox[1] for t in r) - y, y - max(t.bbox[3] for t in r))
                     if d >= -1.0]
        if distances:
            out = max(out, min(distances))
    return out


def _near(row: list[Token], rule: float, limit: float) -> bool:
    return min(abs(min(t.bbox[1] for t in row) - rule), abs(rule - max(t.bbox[3] for t in row))) <= limit


def _distinct(tables: list[TextTable]) -> list[TextTable]:
    """Overlapping regions (two seeds grown into one table): the larger one."""
    out: list[TextTable] = []
    for table in sorted(tables, key=lambda t: -(t.bbox[3] - t.bbox[1]) * (t.bbox[2] - t.bbox[0])):
        if not any(_overlap(table.bbox, kept.bbox) for kept in out):
            out.append(table)
    return sorted(out, key=lambda t: (t.bbox[1], t.bbox[0]))


def _overlap(a: BBox, b: BBox) -> bool:
    """The boxes share more than a boundary (two tables may meet at a rule)."""
    return a[0] + 1 < b[2] and b[0] + 1 < a[2] and a[1] + 1 < b[3] and b[1] + 1 < a[3]


# --- unruled tables ------------------------------------------------------------------------------------


def _bands(lines: Sequence[TextLine], gutter: float | None) -> list[list[TextLine]]:
    if gutter is None:
        return [list(lines)]
    return [[ln for ln in lines if ln.x1 <= gutter + 1], [ln for ln in lines if ln.x0 >= gutter - 1]]


def _multi(row: list[Token], em: float) -> bool:
    return len(row) >= 2 and any(b.x0 - a.x1 >= UNRULED_RIVER * em for a, b in itertools.pairwise(row))


def _runs(rows: list[list[Token]], em: float) -> list[list[list[Token]]]:
    """Runs of multi-piece rows set close together whose columns line up. Single-piece rows join a run
    between two of its rows (at most 3: a wrapped cell), or after its last row when they start at one of
    its inner columns (the wrapped end of a cell); a multi-piece row whose inner cells start where none of
    the run's do begins a new run."""
    tolerance = 0.3 * em + 1.0
    runs: list[list[list[Token]]] = []
    current: list[list[Token]] = []
    pending: list[list[Token]] = []

    def starts(rows_: list[list[Token]]) -> list[float]:
        return [t.x0 for r in rows_ if _multi(r, em) for t in r[1:]]

    def close() -> None:
        inner = starts(current)
        gaps = [_gap(a, b) for a, b in itertools.pairwise(current)]
        first_end = max((r[0].x1 for r in current if _multi(r, em)), default=0.0)
        for row in pending:
            at_inner = any(abs(row[0].x0 - x) <= tolerance for x in inner)
            # the wrapped end of a first-column cell: as close as the table's tightest lines, as narrow
            tightest = min(gaps) if gaps else 0.3 * em
            wrapped = _gap(current[-1], row) <= tightest + 1.0 and row[-1].x1 <= first_end + em
            if not (at_inner or wrapped):
                break
            current.append(row)
        runs.append(list(current))

    for row in rows:
        last = (pending or current)[-1] if (pending or current) else None
        close_by = last is not None and _gap(last, row) <= 1.5 * em
        if _multi(row, em):
            lined_up = any(abs(t.x0 - x) <= tolerance for t in row[1:] for x in starts(current))
            if current and close_by and lined_up:
                current.extend(pending)
                current.append(row)
            else:
                if current:
                    close()
                current = [row]
            pending = []
        elif current and close_by and len(pending) < 3:
            pending.append(row)
        else:
            if current:
                close()
            current, pending = [], []
    if current:
        close()
    return runs


Layout = tuple[float, ...]  # the column starts of a table, from its first column's (pt)


def layout_of(columns: list[tuple[float, float]]) -> Layout:
    return tuple(a - columns[0][0] for a, _ in columns)


def _same_layout(columns: list[tuple[float, float]], layout: Layout | None) -> bool:
    return layout is not None and len(layout) == len(columns) >= 2 \
        and all(abs(x - y) <= 2.0 for x, y in zip(layout_of(columns), layout, strict=True))


@dataclass
class UnruledResult:
    tables: list[TextTable]
    verify: list[BBox]  # near misses at a column's top or bottom (a broken small table): visual check
    carry: Layout | None  # the layout of a table that runs to the end of the last column


def unruled_tables(lines: Sequence[TextLine], gutter: float | None, carry: Layout | None = None
                   ) -> UnruledResult:
    """Tables set in aligned columns without rules, found in each column of the page, and the layout of a
    table that runs to the end of the last column (it may go on at the top of the next one). At the top
    of a column, one row laid out like the table `carry` describes (its columns, wherever the column of the
    page begins) goes on with that table. A run of 2 aligned rows at the top or bottom of a column (part of
    a small table broken there) is not lifted but marked for a visual check."""
    out = UnruledResult([], [], None)
    for band in _bands(lines, gutter):
        tokens = tokens_of(band)
        if not tokens:
            continue
        em = _em(tokens)
        rows = visual_rows(tokens)
        ended: Layout | None = None
        for run in _runs(rows, em):
            flat = [t for r in run for t in r]
            columns = grid_of(run, UNRULED_RIVER * em)
            going_on = run[0] is rows[0] and _same_layout(columns, carry)
            if not _aligned(columns, run, 0.3 * em + 1.0) or _only_gutter(columns, gutter) \
                    or _prose_like(columns, run, em) or _justified(run, band) \
                    or _justified_column(columns, run, em):
                continue
            box: BBox = (min(t.x0 for t in flat), min(t.bbox[1] for t in flat),
                         max(t.x1 for t in flat), max(t.bbox[3] for t in flat))
            if not _valid(columns, run, 1 if going_on else 3, 1 if going_on else 2):
                at_edge = run[0] is rows[0] or run[-1] is rows[-1]
                if at_edge and _valid(columns, run, 2, 1):
                    out.verify.append(box)
                continue
            out.tables.append(TextTable(box, table_rows(run, columns, []), columns))
            if run[-1] is rows[-1]:
                ended = layout_of(columns)
        carry = ended
    out.carry = carry
    return out


@dataclass
class PageTables:
    regions: list[TableRegion]
    verify: list[BBox]  # regions to check on the page (not lifted)
    carry: Layout | None  # an unruled table broken at the end of the page


Words = Sequence[Token] | Callable[[], Sequence[Token]]  # the page's words, or how to read them


def find_text_tables(page: int, lines: Sequence[TextLine], words: Words, rules: Sequence[Segment],
                     gutter: float | None, carry: Layout | None = None) -> PageTables:
    """Horizontal-rule and unruled tables of one page (lines: the body, furniture and grid tables removed),
    and the layout of an unruled table broken at the end of the page (`carry` in: the previous page's).
    `words` may be a function: it is called only when a rule lies in the body (else nothing needs words)."""
    if not lines:
        return PageTables([], [], None)
    body = (min(ln.y0 for ln in lines), max(ln.y1 for ln in lines))
    found: list[TextTable] = []
    if body_rules(rules, body):
        given = words() if callable(words) else words
        found = ruled_tables(list(given) if given else tokens_of(lines), rules, gutter, body)
    rest = [ln for ln in lines if not any(_centre_in(ln, t.bbox) for t in found)]
    unruled = unruled_tables(rest, gutter, carry)
    found += [t for t in unruled.tables if not any(_overlap(t.bbox, f.bbox) for f in found)]
    found.sort(key=lambda t: t.bbox[1])
    return PageTables([TableRegion(page=page, bbox=t.bbox, rows=t.rows) for t in found], unruled.verify,
                      unruled.carry)


def _centre_in(line: TextLine, box: BBox) -> bool:
    cx, cy = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
    return box[0] - 1 <= cx <= box[2] + 1 and box[1] - 1 <= cy <= box[3] + 1
