-- 0005: the audit chain (rag_server/persistence/audit.py). One row per Retrieve / Ask call, linked by hash:
-- hash = sha256(prev_hash || body), body being the canonical JSON of the record (seq and prev_hash included).
-- audit_head holds the latest (seq, hash) and moves in the same transaction as every append, so a removed
-- last record is seen too. Triggers make both tables append-only for every role, the owner included:
-- UPDATE, DELETE and TRUNCATE of a record are refused, the head only moves forward onto a stored record, and
-- an insert must link to the current last record with a correct hash. Disabling the triggers (ALTER TABLE
-- ... DISABLE TRIGGER, as the owner or a superuser, or session_replication_role) is what `rag-server audit
-- verify` then detects.

CREATE TABLE audit_records (
    seq bigint PRIMARY KEY CHECK (seq > 0),
    prev_hash text NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
    hash text NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$'),
    body text NOT NULL
);

CREATE TABLE audit_head (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    seq bigint NOT NULL CHECK (seq >= 0),
    hash text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$')
);

INSERT INTO audit_head (id, seq, hash) VALUES (true, 0, repeat('0', 64));

CREATE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit records are append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE FUNCTION audit_check_link() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last_seq bigint := 0;
    last_hash text := repeat('0', 64);
BEGIN
    SELECT seq, hash INTO last_seq, last_hash FROM audit_records ORDER BY seq DESC LIMIT 1;
    IF NOT FOUND THEN
        last_seq := 0;
        last_hash := repeat('0', 64);
    END IF;
    IF NEW.seq <> last_seq + 1 OR NEW.prev_hash <> last_hash THEN
        RAISE EXCEPTION 'audit record % does not follow record % (its prev_hash must be that record''s hash)',
            NEW.seq, last_seq USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.hash <> encode(sha256(convert_to(NEW.prev_hash || NEW.body, 'UTF8')), 'hex') THEN
        RAISE EXCEPTION 'audit record %: hash is not sha256(prev_hash || body)', NEW.seq
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION audit_head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.seq <= OLD.seq
        OR NOT EXISTS (SELECT 1 FROM audit_records WHERE seq = NEW.seq AND hash = NEW.hash) THEN
        RAISE EXCEPTION 'the audit head only moves forward, onto a stored record'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER audit_records_link BEFORE INSERT ON audit_records
    FOR EACH ROW EXECUTE FUNCTION audit_check_link();
CREATE TRIGGER audit_records_append_only BEFORE UPDATE OR DELETE ON audit_records
    FOR EACH ROW EXECUTE FUNCTION audit_refuse();
CREATE TRIGGER audit_records_no_truncate BEFORE TRUNCATE ON audit_records
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse();

CREATE TRIGGER audit_head_forward_only BEFORE UPDATE ON audit_head
    FOR EACH ROW EXECUTE FUNCTION audit_head_forward();
CREATE TRIGGER audit_head_no_insert_delete BEFORE INSERT OR DELETE ON audit_head
    FOR EACH ROW EXECUTE FUNCTION audit_refuse();
CREATE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON audit_head
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse();
