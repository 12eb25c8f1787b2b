"""Packing to a token budget: whole chunks only, retrieval order kept, omitted ids recorded."""

from __future__ import annotations

from dataclasses import replace

from fictional_formulary import build_chunks

from rag_server.domain import Hit, ScoreKind
from rag_server.retrieval.packing import pack_evidence
from rag_server.text import count_tokens


def _hits(sizes: list[int]) -> list[Hit]:
    base = build_chunks()[0]
    return [
        Hit(replace(base, chunk_id=f"c{i}", text=" ".join(["từ"] * n)), 1.0 / (i + 1), ScoreKind.FUSED)
        for i, n in enumerate(sizes)
    ]


def test_never_cuts_a_chunk_and_records_what_did_not_fit() -> None:
    hits = _hits([40, 70, 30, 10])
    packed = pack_evidence(hits, max_tokens=85)
    assert [h.chunk.chunk_id for h in packed.kept] == ["c0", "c2", "c3"]
    assert packed.omitted_ids == ["c1"]
    for hit in packed.kept:  # text untouched
        assert hit.chunk.text == next(h for h in hits if h.chunk.chunk_id == hit.chunk.chunk_id).chunk.text
    assert packed.tokens == sum(count_tokens(h.chunk.text) for h in packed.kept) <= 85


def test_a_chunk_larger_than_the_budget_is_omitted_not_truncated() -> None:
    packed = pack_evidence(_hits([500]), max_tokens=100)
    assert packed.kept == [] and packed.omitted_ids == ["c0"]


def test_everything_fits() -> None:
    packed = pack_evidence(_hits([5, 5]), max_tokens=6000)
    assert len(packed.kept) == 2 and packed.omitted_ids == []
