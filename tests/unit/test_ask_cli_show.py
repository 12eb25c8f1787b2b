"""`rag-server ask` prints a table block's rows as lifted and says its image came along (fictional cells)."""

from __future__ import annotations

import io

from rag_server.ask_cli import show
from rag_server.gen.rag.v1 import answer_pb2
from rag_server.gen.rag.v1 import common_pb2 as pb


def test_a_table_block_prints_its_rows_and_its_image() -> None:
    table = pb.TableView(
        chunk_id="zelvorin__lieu_luong_va_cach_dung__block__t1",
        rows=[pb.TableRow(cells=["Cân nặng", "Liều"]), pb.TableRow(cells=["10 kg", "5 mg\nmỗi ngày"])],
        image_png=b"\x89PNG fictional",
    )
    block = pb.AnswerBlock(title="Liều lượng (bảng)", table=table, requires_visual_check=True)
    out = io.StringIO()
    assert show(answer_pb2.AskResponse(block=block), out) is None
    text = out.getvalue()
    assert "| Cân nặng | Liều |" in text
    assert "| 10 kg | 5 mg mỗi ngày |" in text
    assert "PNG" in text and "VERIFY_PDF" in text


def test_a_prose_block_prints_no_table() -> None:
    claim = pb.Claim(text="Suy thận nặng.", source_ids=["c1"])
    block = pb.AnswerBlock(title="Chống chỉ định", claims=[claim])
    out = io.StringIO()
    show(answer_pb2.AskResponse(block=block), out)
    assert "Suy thận nặng." in out.getvalue() and "|" not in out.getvalue()
