"""BM25 sparse terms: Vietnamese segmentation, accent folding, stable ids, TF saturation."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag_server.text import bm25
from rag_server.text.bm25 import K1, B, document_vector, query_terms, query_vector, term_id


def test_compound_words_are_one_term_plus_their_syllables() -> None:
    terms = query_terms("Chống chỉ định cho người bệnh")
    assert "chỉ_định" in terms  # underthesea keeps the compound together
    assert "chi_dinh" in terms  # ...and its folded form
    assert {"chỉ", "định", "chi", "dinh"} <= set(terms)  # ...and each syllable, accented and folded
    assert "người_bệnh" in terms and "nguoi_benh" in terms


def test_folded_question_matches_accented_document() -> None:
    doc = document_vector("Người bệnh suy thận nặng phải giảm liều.")
    plain = query_vector("nguoi benh suy than")
    overlap = set(doc.indices) & set(plain.indices)
    assert {term_id(t) for t in ("nguoi", "benh", "suy", "than")} <= overlap


def test_lower_case_and_punctuation_dropped() -> None:
    terms = query_terms("THUỐC, (viên) nén!")
    assert "thuốc" in terms and "thuoc" in terms
    assert not any(ch in t for t in terms for ch in ",()!")


def test_term_ids_are_31_bit_and_stable_across_processes() -> None:
    ids = [term_id(t) for t in ("thận", "than", "chỉ_định")]
    assert all(0 <= i < 2**31 for i in ids)
    assert len(set(ids)) == 3
    code = "from rag_server.text.bm25 import term_id; print(term_id('thận'), term_id('chỉ_định'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    ).stdout.split()
    assert [int(x) for x in out] == [ids[0], ids[2]]


def test_document_values_follow_bm25_saturation() -> None:
    text = "thuốc thuốc thuốc viên"
    counts, dl = bm25.analyze(text)
    assert counts["thuốc"] == 3 and counts["viên"] == 1
    vec = document_vector(text, avgdl=10.0)
    values = dict(zip(vec.indices, vec.values, strict=True))
    norm = K1 * (1 - B + B * dl / 10.0)
    assert values[term_id("thuốc")] == pytest.approx(3 * (K1 + 1) / (3 + norm))
    assert values[term_id("viên")] == pytest.approx(1 * (K1 + 1) / (1 + norm))
    # saturation: three occurrences weigh less than three times one
    assert values[term_id("thuốc")] < 3 * values[term_id("viên")]


def test_longer_documents_weigh_a_term_less() -> None:
    short = dict(zip(*(lambda v: (v.indices, v.values))(document_vector("thuốc ho")), strict=True))
    long_text = "thuốc ho " + " ".join(["nước"] * 200)
    long = dict(zip(*(lambda v: (v.indices, v.values))(document_vector(long_text)), strict=True))
    assert long[term_id("ho")] < short[term_id("ho")]


def test_query_vector_is_one_per_distinct_term_sorted() -> None:
    vec = query_vector("thuốc thuốc ho")
    assert vec.values == [1.0] * len(vec.indices)
    assert vec.indices == sorted(set(vec.indices))
    assert term_id("thuốc") in vec.indices


def test_empty_and_punctuation_only_text() -> None:
    assert query_vector("").indices == []
    assert document_vector(" ,.;!? ").indices == []
