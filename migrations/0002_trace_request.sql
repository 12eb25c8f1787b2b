-- 0002: what a traced call asked for, beside the query text: the drug_ids it named (Retrieve drug_id or
-- frame.drug_ids, AssessPatient drug_ids) and the section_key it named. Patient facts are never stored.

ALTER TABLE retrieval_traces
    ADD COLUMN drug_ids jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(drug_ids) = 'array'),
    ADD COLUMN section_key text NOT NULL DEFAULT '';
