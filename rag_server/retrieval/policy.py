"""EvidencePolicy: the retrieval limits (seed 000 defaults), built from Settings only: one place, no second
copy of the defaults."""

from __future__ import annotations

from dataclasses import dataclass

from rag_server.config import Settings


@dataclass(frozen=True)
class EvidencePolicy:
    candidate_limit: int  # corpus search candidates
    rerank_top_k: int  # free-form / corpus evidence kept after rerank
    max_context_tokens: int  # packing budget (whole chunks only)
    indication_candidate_limit: int  # drugs of a reverse lookup
    indication_retrieval_limit: int  # chunk pool before grouping
    indication_evidence_per_drug: int
    patient_candidate_limit: int  # drugs per AssessPatient call
    safety_hits_per_section: int  # per section and per patient fact
    safety_sections_per_candidate: int  # lexical safety sections per drug
    free_form_pool: int  # hybrid candidates reranked within one drug
    query_cache_size: int  # query embeddings kept (by normalised text)
    section_cache_size: int  # whole sections kept after their first lookup

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
            free_form_pool=settings.free_form_pool,
            query_cache_size=settings.query_cache_size,
            section_cache_size=settings.section_cache_size,
        )

    @classmethod
    def defaults(cls) -> EvidencePolicy:
        """The policy of the default settings."""
        return cls.from_settings(Settings())  # type: ignore[call-arg]
