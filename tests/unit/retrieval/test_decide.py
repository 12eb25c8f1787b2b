"""decide(): the four outcomes, on every evidence shape a caller may pool (Hit, Chunk, pb.Evidence)."""

from __future__ import annotations

from dataclasses import replace

from fictional_formulary import build_chunks

from rag_server.domain import Hit, ScoreKind, SourceRef
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.retrieval.decide import decide

K, R = pb.DecisionKind, pb.DecisionReason


def _hits() -> list[Hit]:
    return [Hit(c, 1.0, ScoreKind.EXACT) for c in build_chunks() if c.drug_id == "zentorin"][:4]


def test_no_evidence_abstains_parent_hydration_failed() -> None:
    d = decide([])
    assert (d.kind, d.reason) == (K.DECISION_KIND_ABSTAIN, R.DECISION_REASON_PARENT_HYDRATION_FAILED)


def test_grounded_evidence_is_answerable() -> None:
    d = decide(_hits())
    assert (d.kind, d.reason) == (K.DECISION_KIND_ANSWERABLE, R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE)
    assert not d.pages


def test_missing_source_refs_abstains_even_beside_good_evidence() -> None:
    hits = _hits()
    hits[2] = Hit(replace(hits[2].chunk, source_refs=[]), 1.0, ScoreKind.EXACT)
    d = decide(hits)
    assert (d.kind, d.reason) == (K.DECISION_KIND_ABSTAIN, R.DECISION_REASON_MISSING_PROVENANCE)
    assert hits[2].chunk.chunk_id in d.message


def test_source_ref_without_printed_page_is_missing_provenance() -> None:
    hits = _hits()
    hits[0] = Hit(replace(hits[0].chunk, source_refs=[SourceRef("doc", 12, 0)]), 1.0, ScoreKind.EXACT)
    assert decide(hits).reason == R.DECISION_REASON_MISSING_PROVENANCE


def test_visual_check_needs_pdf_with_pages() -> None:
    hits = _hits()
    hits[1] = Hit(replace(hits[1].chunk, requires_visual_check=True), 1.0, ScoreKind.EXACT)
    d = decide(hits)
    assert (d.kind, d.reason) == (K.DECISION_KIND_VERIFY_PDF, R.DECISION_REASON_VISUAL_VERIFICATION_REQUIRED)
    ref = hits[1].chunk.source_refs[0]
    assert [(p.document_id, p.physical_page, p.printed_page) for p in d.pages] == [
        (ref.document_id, ref.physical_page, ref.printed_page)
    ]


def test_provenance_is_checked_before_quarantine() -> None:
    hits = _hits()
    hits[0] = Hit(replace(hits[0].chunk, requires_visual_check=True), 1.0, ScoreKind.EXACT)
    hits[1] = Hit(replace(hits[1].chunk, source_refs=[]), 1.0, ScoreKind.EXACT)
    assert decide(hits).reason == R.DECISION_REASON_MISSING_PROVENANCE


def test_accepts_chunks_and_protobuf_evidence() -> None:
    chunk = _hits()[0].chunk
    assert decide([chunk]).kind == K.DECISION_KIND_ANSWERABLE
    ev = pb.Evidence(
        chunk_id="x",
        requires_visual_check=True,
        source_refs=[pb.SourceRef(document_id="d", physical_page=3, printed_page=1)],
    )
    assert decide([ev]).kind == K.DECISION_KIND_VERIFY_PDF
    assert decide([pb.Evidence(chunk_id="y")]).reason == R.DECISION_REASON_MISSING_PROVENANCE
