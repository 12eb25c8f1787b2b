"""PostgreSQL persistence (asyncpg): migrations, conversations and retrieval traces.

Everything here is optional: the service runs without a database (settings.database_url unset), and
writes are fail-open (a trace that cannot be saved is logged, never turned into a failed request).
asyncpg is the `postgres` extra, so this package imports nothing at import time: use its modules
(`persistence.migrate`, `.conversations`, `.traces`, `.pool`, `.recorder`, `.migrate_cli`; the audit chain:
`.audit`, `.audit_store`, `.audit_cli`, which keeps a JSONL file in the data dir without a database).
"""
