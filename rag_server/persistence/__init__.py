"""PostgreSQL persistence (asyncpg): migrations, conversations and retrieval traces.

Everything here is optional: the service runs without a database (settings.database_url unset), and
writes are fail-open (a trace that cannot be saved is logged, never turned into a failed request).
"""

from rag_server.persistence.conversations import ConversationStore, Turn
from rag_server.persistence.migrate import MigrationError, apply_migrations, discover_migrations
from rag_server.persistence.pool import create_pool
from rag_server.persistence.traces import RetrievalTrace, TraceStore

__all__ = [
    "ConversationStore",
    "MigrationError",
    "RetrievalTrace",
    "TraceStore",
    "Turn",
    "apply_migrations",
    "create_pool",
    "discover_migrations",
]
