"""Diagnostics of failed gates: per gate the first pages involved and what the parser saw there."""

from __future__ import annotations

from ingest.diagnose import diagnose, render
from ingest.gates import Gate
from ingest.layout import PageLayout, ParsedDocument, Span, TextLine
from ingest.segment import SegmentNotes


def text_line(text: str, page: int, y: float) -> TextLine:
    bbox = (50.0, y, 50.0 + 5.0 * len(text), y + 12.0)
    return TextLine(spans=[Span(text, bbox=bbox)], page=page, bbox=bbox)


def test_failed_gates_show_furniture_kept_and_dropped_headings_and_titles() -> None:
    pages = [
        PageLayout(
            page=p,
            width=595,
            height=842,
            lines=[text_line(f"ZELVORIN {p}", p, 30.0), text_line("Thận trọng", p, 60.0)],
            running=[text_line("Dược thư quốc gia", p, 14.0)],
            folio=None,
            kept_edges=[f"ZELVORIN {p}"],
        )
        for p in range(1, 6)
    ]
    parsed = ParsedDocument(
        pages=pages,
        page_map={p: (100 + p if p == 3 else None) for p in range(1, 6)},
        body_size=9.5,
        inferred=[3],
    )
    notes = SegmentNotes()
    notes.title(1, "ZELVORIN 1", "not a title: no identity line (or heading) right below")
    notes.heading(2, "Thận trọng", "section than_trong")
    gates = [
        Gate("pages_without_folio", 4, ["1", "2", "4", "5"], [1, 2, 4, 5]),
        Gate("empty_chunks", 0),
        Gate("duplicate_drug_ids", 1, ["zelvorin"], [3]),
    ]
    diagnoses = diagnose(gates, parsed, notes)
    assert [d.gate for d in diagnoses] == ["pages_without_folio", "duplicate_drug_ids"]
    first = diagnoses[0]
    assert [v.page for v in first.pages] == [1, 2, 4] and first.more_pages == 1
    assert first.pages[0].furniture_dropped == ["Dược thư quốc gia"]
    assert first.pages[0].edge_rows_kept == ["ZELVORIN 1"]
    assert diagnoses[1].pages[0].inferred and diagnoses[1].pages[0].printed == 103
    text = "\n".join(render(diagnoses))
    assert "gate pages_without_folio = 4" in text and "page 1 (no printed page)" in text
    assert "furniture dropped: Dược thư quốc gia" in text and "edge rows kept as text: ZELVORIN 1" in text
    assert "title candidates: 'ZELVORIN 1': not a title" in text
    assert "headings: 'Thận trọng': section than_trong" in text
    assert "page 3 (printed 103 (inferred from its neighbours))" in text and "1 more page" in text
