-- 0004: the OpenTelemetry trace id (32 lower-case hex digits) of the call's server span when the server
-- traces (RAG_OTEL=true), '' otherwise: the row of a span found in a tracing backend, and the other way round.

ALTER TABLE retrieval_traces
    ADD COLUMN otel_trace_id text NOT NULL DEFAULT '' CHECK (otel_trace_id ~ '^([0-9a-f]{32})?$');

CREATE INDEX retrieval_traces_otel_trace_idx ON retrieval_traces (otel_trace_id) WHERE otel_trace_id <> '';
