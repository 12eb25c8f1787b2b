"""Running headers/footers and the printed page map.

A row of text is a running header (footer) when it is the top (bottom) row of the page, inside the outer
margin band, and one of:
  * it contains the book mark (default "DTQGVN"),
  * one of its pieces (digits ignored) repeats on many pages ("DƯỢC THƯ MẪU", "Trang #") and the row is
    set apart from the body by a gap,
  * it holds a bare page number (a piece that is only a number, optionally "Trang 12" / "- 12 -") and is
    set apart by a gap,
  * it is set apart by a gap, is smaller than body text, and is a header (top) or starts or ends with a
    number (a small bottom row without a number may be a footnote and is kept).
The folio is the number at the outer edge of the row, after the book mark and its edition number
("DTQGVN 2") are removed. Pages without a folio get one only by interpolation between two neighbours with
the same physical->printed offset; nothing is extrapolated (front matter stays without a printed page).
Pure: works on TextLine records.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ingest.layout import TextLine
from rag_server.text import fold

DEFAULT_MARKS: tuple[str, ...] = ("DTQGVN",)
BAND = 0.11  # fraction of the page height searched for running rows, top and bottom
_BARE_NUMBER = re.compile(r"^(?:trang\s*)?[-–—(\[]?\s*(\d{1,4})\s*(?:(?:/|tren)\s*\d{1,4}\s*)?[-–—)\]]?$")
_EDGE_NUMBER = re.compile(r"^(\d{1,4})\b|\b(\d{1,4})$")
_DIGITS = re.compile(r"\d+")
_SAME_Y = 2.0  # pt: rows this close in height on different pages sit at the same position


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


def signature(text: str) -> str:
    return _DIGITS.sub("#", fold(text))


def _mark_pattern(marks: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(fold(mark)) for mark in marks) or "(?!)"
    return re.compile(rf"(?:{alternatives})(?:\s*\d{{1,2}}\b)?")


def edge_rows(lines: list[TextLine], page: int, page_width: float, page_height: float) -> list[RunningRow]:
    """The top and the bottom row of a page when they lie in the margin bands."""
    content = [line for line in lines if line.text.strip()]
    if len(content) < 1:
        return []
    rows: list[RunningRow] = []
    by_top = sorted(content, key=lambda line: line.y0)
    first = by_top[0]
    if first.y1 <= BAND * page_height:
        centre = (first.y0 + first.y1) / 2
        row = [ln for ln in content if abs((ln.y0 + ln.y1) / 2 - centre) <= 0.5 * first.height]
        ids = {id(ln) for ln in row}
        rest = [ln.y0 for ln in content if id(ln) not in ids]
        gap = (min(rest) - max(ln.y1 for ln in row)) if rest else page_height
        rows.append(RunningRow(page, "top", row, gap, page_width))
    by_bottom = sorted(content, key=lambda line: -line.y1)
    last = by_bottom[0]
    if last.y0 >= (1 - BAND) * page_height and not (rows and any(last is ln for ln in rows[0].lines)):
        centre = (last.y0 + last.y1) / 2
        row = [ln for ln in content if abs((ln.y0 + ln.y1) / 2 - centre) <= 0.5 * last.height]
        ids = {id(ln) for ln in row}
        rest = [ln.y1 for ln in content if id(ln) not in ids]
        gap = (min(ln.y0 for ln in row) - max(rest)) if rest else page_height
        rows.append(RunningRow(page, "bottom", row, gap, page_width))
    return rows


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


def _edge_y(row: RunningRow) -> float:
    return min(ln.y0 for ln in row.lines) if row.where == "top" else max(ln.y1 for ln in row.lines)


def fixed_positions(all_rows: dict[int, list[RunningRow]], where: str, pages: int) -> list[float]:
    """Heights at which a row set apart from the body recurs on 30% of the pages or more (and is set apart
    on at least 80% of the pages where a row sits there): a running header or footer line, whatever its
    text (a drug name that changes, a folio at body size)."""
    rows = sorted(((_edge_y(r), _apart(r)) for rs in all_rows.values() for r in rs if r.where == where),
                  key=lambda item: item[0])
    groups: list[list[tuple[float, bool]]] = []
    for item in rows:
        if groups and item[0] - groups[-1][-1][0] <= _SAME_Y:
            groups[-1].append(item)
        else:
            groups.append([item])
    out: list[float] = []
    for group in groups:
        apart = sum(1 for _, a in group if a)
        if apart >= max(3, 0.3 * pages) and apart >= 0.8 * len(group):
            out.extend(y for y, _ in group)
    return out


def _is_running(row: RunningRow, repeated: set[str], body_size: float, marks: tuple[str, ...],
                fixed: list[float] | None = None) -> bool:
    folded = fold(row.text)
    if any(fold(mark) in folded for mark in marks):
        return True
    if not _apart(row):
        return False
    if fixed and any(abs(_edge_y(row) - y) <= _SAME_Y for y in fixed):
        return True
    if any(signature(line.text) in repeated for line in row.lines):
        return True
    pattern = _mark_pattern(marks)
    if any(_BARE_NUMBER.match(pattern.sub(" ", fold(line.text)).strip()) for line in row.lines):
        return True
    small = all(line.size < 0.92 * body_size for line in row.lines)
    # A small line set apart at the top is a header even without a number (the folio may be in the footer);
    # at the bottom it could be a footnote, so there a number is required.
    return small and (row.where == "top" or bool(_EDGE_NUMBER.search(folded)))


def detect_running(
    pages: list[tuple[int, float, float, list[TextLine]]],
    body_size: float,
    marks: tuple[str, ...] = DEFAULT_MARKS,
) -> RunningResult:
    """pages: (physical page, width, height, lines). Returns the running lines to drop and the folios."""
    all_rows = {page: edge_rows(lines, page, width, height) for page, width, height, lines in pages}
    counts: Counter[str] = Counter()
    for rows in all_rows.values():
        seen: set[str] = set()
        for row in rows:
            for line in row.lines:
                sig = signature(line.text)
                if sig.strip("# "):
                    seen.add(sig)
        counts.update(seen)
    pages_with_rows = sum(1 for rows in all_rows.values() if rows)
    threshold = max(3, int(0.25 * pages_with_rows))
    repeated = {sig for sig, n in counts.items() if n >= threshold}
    fixed = {where: fixed_positions(all_rows, where, len(pages)) for where in ("top", "bottom")}
    running = {page: [row for row in rows if _is_running(row, repeated, body_size, marks, fixed[row.where])]
               for page, rows in all_rows.items()}
    # A number printed on many pages (a year, an edition) is not a page number.
    numbers: Counter[int] = Counter()
    for rows in running.values():
        numbers.update({c[2] for row in rows for c in folio_candidates(row, marks)})
    constant = frozenset(n for n, k in numbers.items() if k >= max(3, 0.3 * pages_with_rows))
    result = RunningResult()
    for page, _width, _height, lines in pages:
        index = {id(line): i for i, line in enumerate(lines)}
        removed: set[int] = set()
        folio: int | None = None
        texts: list[str] = []
        for row in running[page]:
            removed.update(index[id(line)] for line in row.lines)
            texts.append(row.text)
            number = folio_of(row, marks, constant)
            if number is not None and folio is None:
                folio = number
        result.removed[page] = removed
        result.folios[page] = folio
        result.rows[page] = texts
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
