"""decide(): the four outcomes, on the domain evidence a caller may pool (Hit, Chunk), and the minimum
evidence rule per score kind (decide_with)."""

from __future__ import annotations

from dataclasses import replace

from fictional_formulary import build_chunks

from rag_server.domain import DecisionKind, Hit, Reason, ScoreKind, SourceRef
from rag_server.retrieval.decide import EvidenceRule, decide, decide_with

K, R = DecisionKind, Reason


def _hits() -> list[Hit]:
    return [Hit(c, 1.0, ScoreKind.EXACT) for c in build_chunks() if c.drug_id == "zentorin"][:4]


def test_no_evidence_abstains_parent_hydration_failed() -> None:
    d = decide([])
    assert (d.kind, d.reason) == (K.ABSTAIN, R.PARENT_HYDRATION_FAILED)


def test_grounded_evidence_is_answerable() -> None:
    d = decide(_hits())
    assert (d.kind, d.reason) == (K.ANSWERABLE, R.GROUNDED_EVIDENCE_AVAILABLE)
    assert not d.pages


def test_missing_source_refs_abstains_even_beside_good_evidence() -> None:
    hits = _hits()
    hits[2] = Hit(replace(hits[2].chunk, source_refs=[]), 1.0, ScoreKind.EXACT)
    d = decide(hits)
    assert (d.kind, d.reason) == (K.ABSTAIN, R.MISSING_PROVENANCE)
    assert hits[2].chunk.chunk_id in d.message


def test_source_ref_without_printed_page_is_missing_provenance() -> None:
    hits = _hits()
    hits[0] = Hit(replace(hits[0].chunk, source_refs=[SourceRef("doc", 12, 0)]), 1.0, ScoreKind.EXACT)
    assert decide(hits).reason == R.MISSING_PROVENANCE


def test_visual_check_needs_pdf_with_pages() -> None:
    hits = _hits()
    hits[1] = Hit(replace(hits[1].chunk, requires_visual_check=True), 1.0, ScoreKind.EXACT)
    d = decide(hits)
    assert (d.kind, d.reason) == (K.VERIFY_PDF, R.VISUAL_VERIFICATION_REQUIRED)
    ref = hits[1].chunk.source_refs[0]
    assert [(p.document_id, p.physical_page, p.printed_page) for p in d.pages] == [
        (ref.document_id, ref.physical_page, ref.printed_page)
    ]


def test_provenance_is_checked_before_quarantine() -> None:
    hits = _hits()
    hits[0] = Hit(replace(hits[0].chunk, requires_visual_check=True), 1.0, ScoreKind.EXACT)
    hits[1] = Hit(replace(hits[1].chunk, source_refs=[]), 1.0, ScoreKind.EXACT)
    assert decide(hits).reason == R.MISSING_PROVENANCE


def test_accepts_chunks() -> None:
    chunk = _hits()[0].chunk
    assert decide([chunk]).kind == K.ANSWERABLE
    assert decide([replace(chunk, source_refs=[])]).reason == R.MISSING_PROVENANCE


def test_a_shared_syllable_is_no_evidence() -> None:
    """"đau đầu" asked: a searched chunk with only "liều khởi đầu" does not count (whole words only)."""
    hit = _hits()[0]
    only_syllable = Hit(replace(hit.chunk, text="Người lớn: Liều khởi đầu 5 mg."), 0.5, ScoreKind.FUSED)
    word = Hit(replace(hit.chunk, text="Hay gặp: nhức đầu, chóng mặt."), 0.5, ScoreKind.FUSED)
    kept, d = decide_with([only_syllable, word], EvidenceRule(("đau đầu", "nhức đầu")))
    assert kept == [word] and d.usable
    kept, d = decide_with([only_syllable], EvidenceRule(("đau đầu", "nhức đầu")))
    assert (kept, d.reason) == ([], R.INSUFFICIENT_RETRIEVAL_SCORE)


def test_searched_evidence_must_contain_a_term_of_the_question() -> None:
    hits = [Hit(h.chunk, 0.5, ScoreKind.FUSED) for h in _hits()]
    word = hits[0].chunk.text.split()[0]
    kept, d = decide_with(hits, EvidenceRule((word,)))
    assert kept and all(word.lower() in h.chunk.text.lower() for h in kept) and d.usable
    kept, d = decide_with(hits, EvidenceRule(("xyzzyplugh",)))
    assert (kept, d.reason) == ([], R.INSUFFICIENT_RETRIEVAL_SCORE)


def test_exact_evidence_needs_no_term_and_dense_evidence_needs_the_floor() -> None:
    exact = _hits()
    kept, d = decide_with(exact, EvidenceRule(("xyzzyplugh",)))
    assert kept == exact and d.reason == R.GROUNDED_EVIDENCE_AVAILABLE
    dense = [Hit(h.chunk, 0.80, ScoreKind.DENSE) for h in exact]
    assert decide_with(dense, EvidenceRule(dense_floor=0.85))[1].reason == R.INSUFFICIENT_RETRIEVAL_SCORE
    assert decide_with(dense, EvidenceRule(dense_floor=0.75))[1].usable


def test_a_question_without_diacritics_matches_accented_evidence() -> None:
    hits = [Hit(h.chunk, 0.5, ScoreKind.LEXICAL) for h in _hits()]
    kept, _ = decide_with(hits, EvidenceRule(("chay mau",)))
    assert kept and all("chảy máu" in h.chunk.text for h in kept)
