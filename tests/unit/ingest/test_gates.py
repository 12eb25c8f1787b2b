"""Gates: a monograph whose headings start over is two monographs merged (a missed title), and refuses
the load instead of serving the second drug's text as the first's. Fictional data."""

from __future__ import annotations

from ingest.gates import compute_gates
from ingest.segment import Monograph, Piece, Section
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
