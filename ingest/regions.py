"""Regions that prose extraction cannot be trusted with: ruled tables and 2-D formulas. Pure helpers.

* Tables are found by PyMuPDF (`page.find_tables()`, see parse.py) only on pages whose drawings hold a grid
  (at least two horizontal and two vertical rules), which keeps the 1,668-page book cheap. Their cells are
  lifted out of the prose; a marker line takes their place, and the table becomes a block chunk.
* A formula region is a fraction layout (a short horizontal bar with text right above and right below it,
  both no wider than the bar) or a line with many small raised/lowered spans. Its lines are kept in the prose
  but flagged `visual`: they become a visual span of the chunk holding them (`Chunk.visual_spans`), to be
  checked against the page, and the prose around them is not flagged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ingest.layout import BBox, TextLine

Segment = tuple[float, float, float, float]  # x0, y0, x1, y1 of a drawn rule (thin rectangle or line)

_THIN = 1.6  # points: thicker than this is a filled box, not a rule


def rules_from_drawings(drawings: Iterable[dict[str, Any]]) -> tuple[list[Segment], list[Segment]]:
    """Horizontal and vertical rules from PyMuPDF `page.get_drawings()` items (plain dicts)."""
    horizontal: list[Segment] = []
    vertical: list[Segment] = []
    for drawing in drawings:
        for item in drawing.get("items", ()):
            kind = item[0]
            if kind == "l":
                p, q = item[1], item[2]
                x0, x1 = sorted((float(p.x), float(q.x)))
                y0, y1 = sorted((float(p.y), float(q.y)))
                _classify((x0, y0, x1, y1), horizontal, vertical)
            elif kind == "re":
                r = item[1]
                x0, y0, x1, y1 = float(r.x0), float(r.y0), float(r.x1), float(r.y1)
                if x1 - x0 <= _THIN or y1 - y0 <= _THIN:
                    _classify((x0, y0, x1, y1), horizontal, vertical)
                else:  # a cell or frame: four rules
                    horizontal.extend([(x0, y0, x1, y0), (x0, y1, x1, y1)])
                    vertical.extend([(x0, y0, x0, y1), (x1, y0, x1, y1)])
    return horizontal, vertical


def _classify(seg: Segment, horizontal: list[Segment], vertical: list[Segment]) -> None:
    x0, y0, x1, y1 = seg
    if y1 - y0 <= _THIN and x1 - x0 > 2:
        y = (y0 + y1) / 2
        horizontal.append((x0, y, x1, y))
    elif x1 - x0 <= _THIN and y1 - y0 > 2:
        x = (x0 + x1) / 2
        vertical.append((x, y0, x, y1))


def has_grid(horizontal: list[Segment], vertical: list[Segment]) -> bool:
    """Cheap pre-test before the (slower) table finder: enough rules in both directions."""
    return len(horizontal) >= 2 and len(vertical) >= 2


def inside(line: TextLine, box: BBox, slack: float = 1.0) -> bool:
    cx = (line.x0 + line.x1) / 2
    cy = (line.y0 + line.y1) / 2
    return box[0] - slack <= cx <= box[2] + slack and box[1] - slack <= cy <= box[3] + slack


def mark_formulas(lines: list[TextLine], horizontal: list[Segment], body_size: float,
                  tables: list[BBox]) -> int:
    """Flag lines of 2-D formula regions `visual` (visual spans of their chunk); returns how many."""
    flagged = 0
    for seg in horizontal:
        x0, y, x1, _ = seg
        width = x1 - x0
        if width < 8 or width > 320 or any(_seg_in(seg, box) for box in tables):
            continue
        above = [ln for ln in lines if -1.5 * ln.height <= ln.y1 - y <= 2.0 and _within(ln, x0, x1)]
        below = [ln for ln in lines if -2.0 <= ln.y0 - y <= 1.5 * ln.height and _within(ln, x0, x1)]
        if not above or not below:
            continue
        top = min(ln.y0 for ln in above)
        bottom = max(ln.y1 for ln in below)
        for ln in lines:
            centre = (ln.y0 + ln.y1) / 2
            near = ln.x1 >= x0 - 60 and ln.x0 <= x1 + 60
            if top - 0.5 <= centre <= bottom + 0.5 and near and not ln.visual:
                ln.visual = True
                flagged += 1
    for ln in lines:
        small = [s for s in ln.spans if s.text.strip() and s.size < 0.8 * body_size]
        normal = [s for s in ln.spans if s.text.strip() and s.size >= 0.8 * body_size]
        if len(small) >= 3 and normal and not ln.visual:
            ln.visual = True
            flagged += 1
    return flagged


def _within(line: TextLine, x0: float, x1: float) -> bool:
    return line.x0 >= x0 - 3 and line.x1 <= x1 + 3


def _seg_in(seg: Segment, box: BBox) -> bool:
    return box[0] - 2 <= seg[0] and seg[2] <= box[2] + 2 and box[1] - 2 <= seg[1] <= box[3] + 2


def clean_cell(cell: object) -> str:
    return " ".join(str(cell or "").split())


def table_lines(rows: list[list[str]]) -> tuple[str | None, list[str]]:
    """(header line, row lines). With a full header row, each row reads 'header: cell; header: cell'."""
    rows = [[clean_cell(c) for c in row] for row in rows]
    rows = [row for row in rows if any(row)]
    if not rows:
        return None, []
    header = rows[0]
    if len(rows) == 1 or not all(header):
        return None, [" | ".join(row) for row in rows]
    body = []
    for row in rows[1:]:
        cells = [f"{h}: {c}" if h else c for h, c in zip(header, row, strict=False) if c]
        body.append("; ".join(cells))
    return " | ".join(header), body


def flatten_rows(rows: list[list[str]]) -> list[str]:
    """Rows of a table as text lines: the header line (if any), then the rows."""
    header, body = table_lines(rows)
    return ([header] if header else []) + body
