"""Indication keyword pass: a contiguous word-boundary phrase (not a substring, not a token subset), the
seed's score, and grouping by drug with the MAX score (never a sum or a count). Fictional texts."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fictional_formulary import build_chunks

from rag_server.domain import Chunk, Hit, ScoreKind
from rag_server.retrieval.indication import group_by_drug
from rag_server.retrieval.indication_index import keyword_pass, keyword_score
from rag_server.retrieval.policy import EvidencePolicy


def _chunk(drug_id: str, part: int, text: str) -> Chunk:
    base = next(c for c in build_chunks() if c.section_key == "chi_dinh")
    return replace(
        base,
        chunk_id=f"{drug_id}__chi_dinh__{part}",
        drug_id=drug_id,
        drug_name=drug_id.upper(),
        part_index=part,
        text=text,
    )


CHUNKS = [
    _chunk("alpha", 0, "Điều trị viêm họng sao băng ở trẻ em."),
    _chunk("beta", 0, "Dùng cho sao băng họng viêm mạn."),  # same words, other order: a token subset
    _chunk("gamma", 0, "Điều trị viêm họngsao băng."),  # glued words
    _chunk("delta", 0, "Điều trị viêm họng cấp và sao băng."),
]


def test_contiguous_phrase_only() -> None:
    hits = keyword_pass(CHUNKS, "viêm họng sao băng")
    assert [h.chunk.drug_id for h in hits] == ["alpha"]
    assert hits[0].score_kind == ScoreKind.LEXICAL


def test_not_a_substring_after_folding() -> None:
    chunks = [_chunk("epsilon", 0, "Điều trị chứng hoang tưởng.")]
    assert keyword_pass(chunks, "hoa") == []  # "hoa" is inside "hoang" but is not a word there
    assert keyword_pass(chunks, "hoang") != []


def test_accents_typed_must_match_plain_typing_folds() -> None:
    chunks = [_chunk("zeta", 0, "Dùng khi bị ho kéo dài.")]
    assert keyword_pass(chunks, "hồ kéo dài") == []
    assert [h.chunk.drug_id for h in keyword_pass(chunks, "ho keo dai")] == ["zeta"]


def test_score_rewards_an_early_concise_mention() -> None:
    assert keyword_score(2, 9) == pytest.approx(1 + 1 / 3 + 1 / (1 + 9 / 40))
    early = _chunk("a", 0, "Viêm họng sao băng.")
    late = _chunk("b", 0, "Dùng trong nhiều trường hợp khác nhau, kể cả viêm họng sao băng.")
    hits = keyword_pass([late, early], "viêm họng sao băng")
    assert [h.chunk.drug_id for h in hits] == ["a", "b"] and hits[0].score > hits[1].score


def test_grouping_takes_the_max_never_the_sum_or_count() -> None:
    many = [Hit(_chunk("many", i, f"t{i}"), 1.5, ScoreKind.LEXICAL) for i in range(5)]
    one = [Hit(_chunk("one", 0, "t"), 2.0, ScoreKind.LEXICAL)]
    groups = group_by_drug(sorted(many + one, key=lambda h: -h.score), EvidencePolicy.defaults())
    assert [(g.drug_id, g.score) for g in groups] == [("one", 2.0), ("many", 1.5)]
    assert len(groups[1].evidence) == 2  # indication_evidence_per_drug


def test_grouping_caps_drugs() -> None:
    hits = [Hit(_chunk(f"d{i:02d}", 0, "t"), 3.0 - i / 100, ScoreKind.LEXICAL) for i in range(12)]
    groups = group_by_drug(hits, EvidencePolicy.defaults())
    assert [g.drug_id for g in groups] == [f"d{i:02d}" for i in range(8)]
