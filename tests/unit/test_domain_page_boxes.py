"""Chunk payload fields for tables and page boxes, boxes_for and table_view (pure). Fictional data."""

from __future__ import annotations

from rag_server.domain import (
    Chunk,
    ChunkKind,
    PageBox,
    SourceRef,
    TableView,
    TextBox,
    boxes_for,
    in_visual_span,
    plain_ranges,
    table_view,
)

TEXT = "Người lớn: uống 5 mg mỗi ngày.\nTrẻ em: 0,1 mg/kg, tối đa 5 mg."


def _prose() -> Chunk:
    # three printed lines: the first two on page 7, the third on page 8
    return Chunk(
        chunk_id="zentavir__lieu_luong_va_cach_dung__0", drug_id="zentavir", drug_name="ZENTAVIR",
        section_key="lieu_luong_va_cach_dung", section_title="Liều lượng và cách dùng", part_index=0,
        chunk_kind=ChunkKind.PROSE, text=TEXT,
        source_refs=[SourceRef("d", 7, 107), SourceRef("d", 8, 108)], visual_spans=[(38, 48)],
        boxes=[TextBox(0, 18, 7, 50.0, 700.0, 290.0, 712.5), TextBox(19, 30, 7, 50.0, 712.3, 160.2, 724.8),
               TextBox(31, len(TEXT), 8, 50.0, 60.0, 270.0, 72.5)],
    )


def test_a_span_gets_the_boxes_of_the_lines_it_touches() -> None:
    chunk = _prose()
    first_line = PageBox(7, 107, 50.0, 700.0, 290.0, 712.5)
    assert boxes_for(chunk, 0, 5) == [first_line]
    assert boxes_for(chunk, 0, 30) == [first_line, PageBox(7, 107, 50.0, 712.3, 160.2, 724.8)]
    across = boxes_for(chunk, 20, 40)  # the end of page 7 and the top of page 8
    assert [(b.physical_page, b.printed_page) for b in across] == [(7, 107), (8, 108)]
    assert boxes_for(chunk, 18, 19) == []  # the line break alone
    assert boxes_for(chunk, 35, 35) == [PageBox(8, 108, 50.0, 60.0, 270.0, 72.5)]  # a caret in a line
    assert boxes_for(Chunk(**{**chunk.__dict__, "boxes": []}), 0, 5) == []  # read without its boxes


def test_payload_round_trip_keeps_every_field_and_is_compact() -> None:
    chunk = _prose()
    payload = chunk.to_payload()
    assert payload["boxes"][:7] == [0, 18, 7, 50.0, 700.0, 290.0, 712.5]
    assert payload["visual_spans"] == [38, 48]
    assert Chunk.from_payload(payload) == chunk
    block = Chunk(
        chunk_id="zentavir__lieu_luong_va_cach_dung__block__t1", drug_id="zentavir", drug_name="ZENTAVIR",
        section_key="lieu_luong_va_cach_dung", section_title="Liều lượng và cách dùng", part_index=0,
        chunk_kind=ChunkKind.BLOCK, text="[Bảng]\nCân nặng: < 40 kg; Liều: 2,5 mg/kg",
        source_refs=[SourceRef("d", 7, 107)], requires_visual_check=True, table_id="t1",
        table_rows=[["Cân nặng", "Liều"], ["< 40 kg", "2,5 mg/kg"]], table_png=b"\x89PNG\r\n\x00\xff",
        boxes=[TextBox(0, 41, 7, 50.0, 400.0, 545.0, 480.0)],
    )
    again = Chunk.from_payload(block.to_payload())
    assert again == block and again.table_png == b"\x89PNG\r\n\x00\xff"
    assert table_view(again) == TableView(block.chunk_id, (("Cân nặng", "Liều"), ("< 40 kg", "2,5 mg/kg")),
                                          b"\x89PNG\r\n\x00\xff", (SourceRef("d", 7, 107),))
    assert table_view(chunk) is None


def test_a_payload_written_before_the_page_fields_loads_with_them_empty() -> None:
    payload = _prose().to_payload()
    for key in ("visual_spans", "table_rows", "table_png", "boxes"):
        del payload[key]
    old = Chunk.from_payload(payload)
    assert old.text == TEXT and old.visual_spans == [] and old.table_rows == []
    assert old.table_png == b"" and old.boxes == [] and not old.requires_visual_check


def test_the_prose_outside_the_visual_spans_and_what_touches_them() -> None:
    text = "Suy thận: theo công thức:\nClcr = (140 - tuổi) / 72\nỞ nữ, nhân với 0,85."
    start = text.index("Clcr")
    end = start + len("Clcr = (140 - tuổi) / 72")
    chunk = Chunk(chunk_id="z__lieu_luong_va_cach_dung__0", drug_id="z", drug_name="Z",
                  section_key="lieu_luong_va_cach_dung", section_title="Liều", part_index=0,
                  chunk_kind=ChunkKind.PROSE, text=text, visual_spans=[(start, end)])
    prose = [text[s:e] for s, e in plain_ranges(chunk)]
    assert prose == ["Suy thận: theo công thức:", "Ở nữ, nhân với 0,85."]
    assert in_visual_span(chunk, start - 3, start + 1) and in_visual_span(chunk, end - 1, end + 4)
    assert not in_visual_span(chunk, 0, start - 1) and not in_visual_span(chunk, end, len(text))
    flagged = Chunk(**{**chunk.__dict__, "requires_visual_check": True})
    assert plain_ranges(flagged) == [] and in_visual_span(flagged, 0, 1)
    plain = Chunk(**{**chunk.__dict__, "visual_spans": []})
    assert plain_ranges(plain) == [(0, len(text))]
