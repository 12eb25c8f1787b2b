"""Grounding: numbers with their units against the blocks a claim cites (fictional texts)."""

from __future__ import annotations

from rag_server.answer.grounding import quantities, verify
from rag_server.answer.model import Draft, DraftClaim, EvidenceBlock
from rag_server.domain import Chunk, ChunkKind, Reason

TEXTS = ["Người lớn: 2,5 mg/ngày, tối đa 10 mg. Trẻ em từ 6 tuổi.", "Bảo quản dưới 30 độ C."]
BLOCKS = tuple(
    EvidenceBlock(i + 1, Chunk(f"c{i}", "zentorin", "ZENTORIN", "k", "K", 0, ChunkKind.PROSE, t))
    for i, t in enumerate(TEXTS)
)


def _check(text: str, sources: tuple[int, ...]) -> Reason | None:
    failure = verify(Draft((DraftClaim(text, sources),), True), BLOCKS)
    return failure.reason if failure else None


def test_numbers_and_units_are_read_as_written() -> None:
    got = [(q.value, q.unit) for q in quantities("2,5 mg/ngày, 10mg, 6 tuổi, 1.000 ml, 5%")]
    assert got == [("2.5", "mg/ngày"), ("10", "mg"), ("6", "tuổi"), ("1.000", "ml"), ("5", "%")]


def test_a_number_must_be_in_a_block_the_claim_cites() -> None:
    assert _check("Người lớn: 2.5 mg/ngày.", (1,)) is None  # decimal point or comma alike
    assert _check("Tối đa 10mg.", (1,)) is None  # spacing before the unit ignored
    assert _check("Tối đa 20 mg.", (1,)) is Reason.UNGROUNDED_NUMBER
    assert _check("Tối đa 10 g.", (1,)) is Reason.UNGROUNDED_NUMBER  # the unit counts
    assert _check("Bảo quản dưới 30 độ C.", (1,)) is Reason.UNGROUNDED_NUMBER  # in block 2, not cited
    assert _check("Bảo quản dưới 30 độ C.", (2,)) is None


def test_citations_must_exist_and_point_inside() -> None:
    assert _check("Người lớn: 2,5 mg/ngày.", ()) is Reason.UNCITED_CLAIM
    assert _check("Người lớn: 2,5 mg/ngày.", (3,)) is Reason.INVALID_CITATION
    assert _check("Người lớn: 2,5 mg/ngày.", (0,)) is Reason.INVALID_CITATION
