-- 0001: conversations, their turns, and one trace row per retrieval/answer call.
-- Applied by `rag-server migrate` (rag_server/persistence/migrate.py) inside one transaction,
-- recorded in schema_migrations. Never edit an applied migration: add 0002_*.sql instead.

CREATE TABLE conversations (
    conversation_id text PRIMARY KEY
        CHECK (conversation_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE conversation_turns (
    id bigserial PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES conversations (conversation_id) ON DELETE CASCADE,
    turn_index integer NOT NULL CHECK (turn_index >= 0),
    role text NOT NULL CHECK (role IN ('user', 'assistant')),
    content text NOT NULL,
    -- The QueryFrame the turn was read as (user turns), as JSON; NULL when not understood.
    frame jsonb,
    correlation_id text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (conversation_id, turn_index)
);

CREATE TABLE retrieval_traces (
    trace_id uuid PRIMARY KEY,
    correlation_id text NOT NULL,
    conversation_id text,
    -- "RetrievalService/Retrieve", "RetrievalService/LookupIndication", ...
    rpc text NOT NULL,
    query text NOT NULL DEFAULT '',
    -- rag.v1.Route name without prefix: section, section_pooled, drug_overview, free_form, corpus_search, none.
    route text NOT NULL,
    -- rag.v1.DecisionKind / DecisionReason names without prefix: abstain, insufficient_retrieval_score, ...
    decision_kind text NOT NULL,
    decision_reason text NOT NULL,
    -- chunk_ids in the order they were returned, and those left out by the token budget.
    evidence_chunk_ids jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(evidence_chunk_ids) = 'array'),
    omitted_chunk_ids jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(omitted_chunk_ids) = 'array'),
    -- {"stage": millis, ...}
    timings jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(timings) = 'object'),
    corpus_generation text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX retrieval_traces_correlation_id_idx ON retrieval_traces (correlation_id);
CREATE INDEX retrieval_traces_created_at_idx ON retrieval_traces (created_at DESC);
CREATE INDEX retrieval_traces_reason_idx ON retrieval_traces (decision_reason, created_at DESC);
