"""Which serving process this is, when `rag-server serve` runs several (rag_server/workers/__init__.py).

Worker 0 is the *owner*: it opens the store for writing (the embedded store's directory lock), runs every
Ingest and UploadDocument (its relay port, a unix socket in the run directory, takes them from the other
workers) and switches generations. The others *follow*: they read the store and serve the generation it
switched to, and hand ingestion to the owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WORKER_HEADER = "x-rag-worker"  # in the trailers (and a stream's headers): the worker that answered


@dataclass(frozen=True)
class Role:
    index: int  # 0 .. count - 1; 0 owns ingestion and the switch
    count: int
    run_dir: Path  # made by the parent for this run (0700): relay socket, shared conversations, metrics
    parent_pid: int  # a worker whose parent is gone stops (nothing else would stop it)

    @property
    def owner(self) -> bool:
        return self.index == 0

    @property
    def name(self) -> str:
        return "owner" if self.owner else "follower"

    @property
    def relay_socket(self) -> Path:
        """Where the owner takes the Ingest and UploadDocument calls the other workers received."""
        return self.run_dir / "owner.sock"

    @property
    def relay_target(self) -> str:
        return f"unix:{self.relay_socket}"

    @property
    def conversations(self) -> Path:
        """Conversation memory the workers share when no database is configured (answer/shared_memory.py)."""
        return self.run_dir / "conversations.sqlite3"

    @property
    def trailers(self) -> tuple[tuple[str, str], ...]:
        return ((WORKER_HEADER, str(self.index)),)

    def follower_dir(self, store_dir: Path) -> Path:
        """This follower's private copy of the served generation (store/follower.py)."""
        return store_dir / "followers" / str(self.index)
