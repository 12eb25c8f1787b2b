"""The edge: a chunk's table cells and visual spans on Evidence, a decision's visual-check chunk ids, a
claim's page boxes and a table block's TableView on the wire; the Python client reads the same bytes.
Fictional data."""

from __future__ import annotations

from formulary_rag_client.gen.rag.v1 import answer_pb2 as client_answer_pb2
from formulary_rag_client.gen.rag.v1 import common_pb2 as client_pb

from rag_server.answer.model import Block, Claim, Support
from rag_server.api import answer_convert, convert
from rag_server.domain import (
    Chunk,
    ChunkKind,
    Decision,
    DecisionKind,
    Hit,
    PageBox,
    Reason,
    ScoreKind,
    SourceRef,
    TextBox,
    boxes_for,
    table_view,
)

REFS = [SourceRef("d", 7, 107)]
PNG = b"\x89PNG\r\n\x1a\n\x00\xff"


def _block() -> Chunk:
    return Chunk(
        chunk_id="zentavir__lieu_luong_va_cach_dung__block__t1", drug_id="zentavir", drug_name="ZENTAVIR",
        section_key="lieu_luong_va_cach_dung", section_title="Liều lượng và cách dùng", part_index=0,
        chunk_kind=ChunkKind.BLOCK, text="[Bảng]\nCân nặng: < 40 kg; Liều: 2,5 mg/kg", source_refs=REFS,
        requires_visual_check=True, table_id="t1",
        table_rows=[["Cân nặng", "Liều"], ["< 40 kg", "2,5 mg/kg"]], table_png=PNG,
        boxes=[TextBox(0, 39, 7, 50.0, 400.0, 545.0, 480.0)],
    )


def test_evidence_carries_the_table_rows_and_the_visual_spans() -> None:
    msg = convert.evidence(Hit(_block(), 1.0, ScoreKind.EXACT))
    assert [list(r.cells) for r in msg.table_rows] == [["Cân nặng", "Liều"], ["< 40 kg", "2,5 mg/kg"]]
    prose = Chunk(
        chunk_id="zentavir__lieu_luong_va_cach_dung__0", drug_id="zentavir", drug_name="ZENTAVIR",
        section_key="lieu_luong_va_cach_dung", section_title="Liều lượng và cách dùng", part_index=0,
        chunk_kind=ChunkKind.PROSE, text="Người lớn: 5 mg.\nClcr = (140 - tuổi) / 72", source_refs=REFS,
        visual_spans=[(17, 40)],
    )
    msg = convert.evidence(Hit(prose, 1.0, ScoreKind.EXACT))
    assert [(s.start, s.end) for s in msg.visual_spans] == [(17, 40)] and not msg.requires_visual_check
    assert not msg.table_rows
    back = client_pb.Evidence.FromString(msg.SerializeToString())
    assert [(s.start, s.end) for s in back.visual_spans] == [(17, 40)]


def test_a_decision_names_the_chunks_that_need_the_visual_check() -> None:
    decision = Decision(DecisionKind.VERIFY_PDF, Reason.VISUAL_VERIFICATION_REQUIRED, "đọc trên trang",
                        tuple(REFS), visual_check_chunk_ids=(_block().chunk_id,))
    msg = convert.decision(decision)
    assert list(msg.visual_check_chunk_ids) == [_block().chunk_id]


def test_a_claim_support_carries_its_first_page_and_the_boxes_of_its_lines() -> None:
    boxes = (PageBox(7, 107, 50.0, 700.0, 290.0, 712.5), PageBox(8, 108, 50.0, 60.0, 270.0, 72.5))
    claim = Claim("Người lớn: 5 mg.", ("c1",), (Support("c1", 3, 40, 7, boxes),))
    [support] = answer_convert.claim(claim).support
    assert (support.chunk_id, support.start, support.end, support.physical_page) == ("c1", 3, 40, 7)
    assert [(b.physical_page, b.printed_page, b.x0, b.y0, b.x1, b.y1) for b in support.boxes] == [
        (7, 107, 50.0, 700.0, 290.0, 712.5), (8, 108, 50.0, 60.0, 270.0, 72.5)]
    # without a page given, the first box's page; without boxes (an older pipeline), nothing is invented
    assert convert.claim_support("c1", 3, 40, 0, boxes).physical_page == 7
    bare = answer_convert.claim(Claim("x", ("c1",), (Support("c1", 0, 1),))).support[0]
    assert bare.physical_page == 0 and not bare.boxes


def test_a_table_block_carries_its_table_view() -> None:
    view = table_view(_block())
    assert view is not None
    msg = answer_convert.block(Block("Zentavir: Liều lượng và cách dùng", requires_visual_check=True,
                                     pages=tuple(REFS), table=view))
    assert msg.HasField("table") and msg.table.chunk_id == _block().chunk_id
    assert msg.table.image_png == PNG
    assert [list(r.cells) for r in msg.table.rows] == [["Cân nặng", "Liều"], ["< 40 kg", "2,5 mg/kg"]]
    assert [(p.physical_page, p.printed_page) for p in msg.table.pages] == [(7, 107)]
    assert not answer_convert.block(Block("Zentavir: Chỉ định")).HasField("table")
    wire = answer_convert.event(Block("t", table=view), "cid").SerializeToString()
    back = client_answer_pb2.AskResponse.FromString(wire)
    assert back.block.table.image_png == PNG and back.block.table.rows[1].cells[1] == "2,5 mg/kg"


def test_boxes_for_converts_to_claim_support_boxes() -> None:
    boxes = boxes_for(_block(), 0, 5)
    assert boxes == [PageBox(7, 107, 50.0, 400.0, 545.0, 480.0)]
    assert convert.page_box(boxes[0]).printed_page == 107
