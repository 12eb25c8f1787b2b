"""Diagnostics for failed gates: per gate, the first pages involved and what the parser saw there.

For each page: its printed page (read, inferred from its neighbours, or unknown), the furniture lines it
dropped (running headers and footers), the rows at the page edges it kept as body text, the title
candidates with their verdict, the section headings it recognised, and the first body lines. That is what a
user with an unfamiliar printing needs to see why a gate failed (a header line read as text, a folio not
found, a name in the header taken for a title) in one run of `rag-server ingest --check`.
Pure: works on the gates, the parsed document and the segmentation notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ingest.gates import Gate
from ingest.layout import ParsedDocument
from ingest.segment import SegmentNotes

MAX_PAGES = 3  # pages shown per failed gate
MAX_ITEMS = 8  # title candidates and headings shown per page
_CLIP = 90


@dataclass
class PageView:
    page: int  # physical, 1-based
    printed: int | None
    folio_read: int | None
    inferred: bool
    furniture_dropped: list[str] = field(default_factory=list)
    edge_rows_kept: list[str] = field(default_factory=list)
    title_candidates: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    first_lines: list[str] = field(default_factory=list)


@dataclass
class GateDiagnosis:
    gate: str
    count: int
    examples: list[str]
    pages: list[PageView]
    more_pages: int = 0  # pages involved beyond those shown


def page_view(parsed: ParsedDocument, notes: SegmentNotes, page: int) -> PageView:
    layout = next((p for p in parsed.pages if p.page == page), None)
    view = PageView(page=page, printed=parsed.printed(page), folio_read=layout.folio if layout else None,
                    inferred=page in parsed.inferred)
    if layout is None:
        return view
    view.furniture_dropped = [_clip(ln.text) for ln in sorted(layout.running, key=lambda ln: (ln.y0, ln.x0))]
    view.edge_rows_kept = [_clip(text) for text in layout.kept_edges]
    view.title_candidates = list(notes.titles.get(page, []))
    view.headings = list(notes.headings.get(page, []))
    view.first_lines = [_clip(ln.text) for ln in layout.lines[:3]]
    return view


def diagnose(gates: Sequence[Gate], parsed: ParsedDocument, notes: SegmentNotes,
             max_pages: int = MAX_PAGES) -> list[GateDiagnosis]:
    """One diagnosis per failed gate."""
    out: list[GateDiagnosis] = []
    for gate in gates:
        if not gate.count:
            continue
        shown = gate.pages[:max_pages]
        out.append(GateDiagnosis(gate=gate.name, count=gate.count, examples=list(gate.examples),
                                 pages=[page_view(parsed, notes, p) for p in shown],
                                 more_pages=max(0, len(gate.pages) - len(shown))))
    return out


def render(diagnoses: Sequence[GateDiagnosis]) -> list[str]:
    """The diagnoses as plain text lines (the CLI prints them under the summary)."""
    lines: list[str] = []
    for d in diagnoses:
        examples = f"  e.g. {', '.join(d.examples[:3])}" if d.examples else ""
        lines.append(f"gate {d.gate} = {d.count}{examples}")
        if not d.pages:
            lines.append("  (no page to show)")
        for v in d.pages:
            if v.printed is None:
                where = "no printed page"
            elif v.inferred:
                where = f"printed {v.printed} (inferred from its neighbours)"
            else:
                where = f"printed {v.printed}"
            read = "" if v.folio_read is None or v.folio_read == v.printed else f"; folio read {v.folio_read}"
            lines.append(f"  page {v.page} ({where}{read})")
            lines.append(f"    furniture dropped: {_join(v.furniture_dropped)}")
            lines.append(f"    edge rows kept as text: {_join(v.edge_rows_kept)}")
            lines.append(f"    title candidates: {_join(v.title_candidates)}")
            lines.append(f"    headings: {_join(v.headings)}")
            lines.append(f"    first lines: {_join(v.first_lines)}")
        if d.more_pages:
            lines.append(f"  ... and {d.more_pages} more page(s)")
    return lines


def _join(items: list[str]) -> str:
    if not items:
        return "-"
    more = f" | … {len(items) - MAX_ITEMS} more" if len(items) > MAX_ITEMS else ""
    return " | ".join(items[:MAX_ITEMS]) + more


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CLIP else text[: _CLIP - 1] + "…"
