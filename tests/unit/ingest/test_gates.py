"""Gates: a monograph whose headings start over is two monographs merged (a missed title), and refuses
the load instead of serving the second drug's text as the first's; a table without its image, or text
without its page boxes, cannot be shown as printed. Fictional data."""

from __future__ import annotations

from ingest.gates import compute_gates
from ingest.segment import Monograph, Piece, Section
from rag_server.domain import Chunk, ChunkKind, SourceRef, TextBox
from rag_server.vocabulary import load_vocabulary


def _monograph(repeated: list[str]) -> Monograph:
    chi_dinh = Section("chi_dinh", "Chỉ định", 1, [Piece("Đau đầu do trăng tròn.", 1, True)])
    return Monograph("zentavir", "ZENTAVIR", "Zentavir", [], 1, [chi_dinh], ignored_headings=repeated)


def _starting_over(mono: Monograph) -> int:
    gates = {g.name: g for g in compute_gates([mono], [], {}, load_vocabulary(), 800)}
    return gates["monographs_starting_over"].count


def test_headings_that_start_over_fail_the_gate() -> None:
    merged = _monograph(["Chỉ định", "Chống chỉ định", "Thận trọng", "Liều lượng và cách dùng"])
    assert _starting_over(merged) == 1


def test_one_or_two_repeated_headings_are_not_a_merge() -> None:
    assert _starting_over(_monograph(["Thận trọng"])) == 0
    assert _starting_over(_monograph(["Thận trọng", "THẬN TRỌNG:", "Người lớn"])) == 0  # one section, twice


def _gates(chunks: list[Chunk]) -> dict[str, int]:
    mono = _monograph([])
    return {g.name: g.count for g in compute_gates([mono], chunks, {3: 103}, load_vocabulary(), 800)}


def _chunk(kind: ChunkKind, text: str, boxes: list[TextBox], png: bytes = b"") -> Chunk:
    return Chunk(chunk_id=f"zentavir__chi_dinh__{kind.value}", drug_id="zentavir", drug_name="Zentavir",
                 section_key="chi_dinh", section_title="Chỉ định", part_index=0, chunk_kind=kind, text=text,
                 source_refs=[SourceRef("d", 3, 103)], requires_visual_check=kind is ChunkKind.BLOCK,
                 table_png=png, boxes=boxes)


def test_a_table_block_without_its_image_fails_the_gate() -> None:
    text = "[Bảng trích tự động]\nLiều: 5 mg"
    box = [TextBox(0, len(text), 3, 50, 100, 300, 160)]
    assert _gates([_chunk(ChunkKind.BLOCK, text, box, b"\x89PNG")])["tables_without_image"] == 0
    assert _gates([_chunk(ChunkKind.BLOCK, text, box)])["tables_without_image"] == 1


def test_text_outside_every_box_fails_the_gate() -> None:
    text = "Đau đầu do trăng tròn.\nSốt về đêm."
    whole = [TextBox(0, 22, 3, 50, 100, 200, 112), TextBox(23, len(text), 3, 50, 113, 120, 125)]
    assert _gates([_chunk(ChunkKind.PROSE, text, whole)])["chunks_without_boxes"] == 0
    assert _gates([_chunk(ChunkKind.PROSE, text, whole[:1])])["chunks_without_boxes"] == 1  # a line left out
    assert _gates([_chunk(ChunkKind.PROSE, text, whole[::-1])])["chunks_without_boxes"] == 1  # out of order
    other_page = [whole[0], TextBox(23, len(text), 4, 50, 113, 120, 125)]
    assert _gates([_chunk(ChunkKind.PROSE, text, other_page)])["chunks_without_boxes"] == 1
    flat = [whole[0], TextBox(23, len(text), 3, 50, 113, 120, 113)]  # no area
    assert _gates([_chunk(ChunkKind.PROSE, text, flat)])["chunks_without_boxes"] == 1
