"""EvidencePolicy: the retrieval limits of seed 000, built from Settings (one place, no magic numbers)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_server.config import Settings


@dataclass(frozen=True)
class EvidencePolicy:
    candidate_limit: int = 5  # corpus search candidates
    rerank_top_k: int = 6  # free-form / corpus evidence kept after rerank
    max_context_tokens: int = 6000  # packing budget (whole chunks only)
    indication_candidate_limit: int = 8  # drugs of a reverse lookup
    indication_retrieval_limit: int = 40  # chunk pool before grouping
    indication_evidence_per_drug: int = 2
    patient_candidate_limit: int = 2  # drugs per AssessPatient call
    safety_hits_per_section: int = 1  # per section and per patient fact
    safety_sections_per_candidate: int = 4  # lexical safety sections per drug
    free_form_pool: int = 12  # hybrid candidates reranked within one drug (2 x rerank_top_k)

    @classmethod
    def from_settings(cls, settings: Settings) -> EvidencePolicy:
        return cls(
            candidate_limit=settings.candidate_limit,
            rerank_top_k=settings.rerank_top_k,
            max_context_tokens=settings.max_context_tokens,
            indication_candidate_limit=settings.indication_candidate_limit,
            indication_retrieval_limit=settings.indication_retrieval_limit,
            indication_evidence_per_drug=settings.indication_evidence_per_drug,
            patient_candidate_limit=settings.patient_candidate_limit,
            safety_hits_per_section=settings.safety_hits_per_section,
            safety_sections_per_candidate=settings.safety_sections_per_candidate,
            free_form_pool=max(2 * settings.rerank_top_k, settings.rerank_top_k),
        )
