"""Table images: each lifted table's region of the printed page, rendered once at ingest as a PNG.

A table is shown to a clinician as it was printed (its lifted cells beside the picture, to be checked on
the page), so the picture is cut from the page itself: `page.get_pixmap(clip=...)` of the table's box with
a small margin, at `DPI`. Rendered in the process that builds the chunks, with the document it already has
open, after segmentation (only the tables that stayed tables: identity lines drawn as a table are read
back as text and not rendered); a book has few tables, and each page is loaded once.
"""

from __future__ import annotations

import pymupdf

from ingest.layout import BBox
from ingest.segment import LiftedTable, Monograph

DPI = 150  # legible cells (a 9 pt digit is about 19 px high) at a few tens of KB per table
MARGIN = 4.0  # points around the region: its outer rules and the ends of its cells


def crop_box(bbox: BBox, page_rect: pymupdf.Rect, margin: float = MARGIN) -> pymupdf.Rect | None:
    """The region to render: the table's box grown by `margin`, inside the page (None when empty)."""
    x0, y0, x1, y1 = bbox
    rect = pymupdf.Rect(x0 - margin, y0 - margin, x1 + margin, y1 + margin) & page_rect
    return None if rect.is_empty or rect.width < 1 or rect.height < 1 else rect


def render_table(page: pymupdf.Page, bbox: BBox, dpi: int = DPI) -> bytes:
    """The PNG of a table region of `page` (empty bytes when the region is empty)."""
    clip = crop_box(bbox, page.rect)
    if clip is None:
        return b""
    return bytes(page.get_pixmap(clip=clip, dpi=dpi, alpha=False).tobytes("png"))


def render_tables(doc: pymupdf.Document, monographs: list[Monograph], dpi: int = DPI) -> int:
    """Set `png` on every lifted table of the monographs; returns how many were rendered."""
    tables: list[LiftedTable] = [t for m in monographs for s in m.sections for t in s.tables]
    page: pymupdf.Page | None = None
    rendered = 0
    for table in sorted(tables, key=lambda t: t.page):  # each page loaded once
        if not 1 <= table.page <= doc.page_count:
            continue
        if page is None or page.number != table.page - 1:
            page = doc.load_page(table.page - 1)
        table.png = render_table(page, table.bbox, dpi)
        rendered += bool(table.png)
    return rendered
