-- 0003: AnswerService/Ask calls are traced in retrieval_traces too (rpc = 'AnswerService/Ask'), with what
-- only an answer has: the frame it was understood as (after the conversation's earlier turns) and its
-- citations ({chunk_id, drug_id, section_key, printed_page} per cited chunk). The question text is kept as
-- `query`, as for Retrieve; patient facts are never stored (the frame keeps drugs, section and turn type).

ALTER TABLE retrieval_traces
    ADD COLUMN frame jsonb,
    ADD COLUMN citations jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(citations) = 'array');

CREATE INDEX retrieval_traces_conversation_idx ON retrieval_traces (conversation_id, created_at)
    WHERE conversation_id IS NOT NULL;
