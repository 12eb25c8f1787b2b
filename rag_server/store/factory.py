"""Open the configured store from Settings."""

from __future__ import annotations

from pathlib import Path

from rag_server.config import Settings
from rag_server.extras import Extra, require
from rag_server.store.base import Store
from rag_server.store.common import StoreError


def open_store(settings: Settings, dims: int | None = None, follower_dir: Path | None = None) -> Store:
    """The store of `settings` (edge under data_dir/store, or qdrant-client). When `dims` is given, a
    served generation with other dimensions is refused. `follower_dir`: the embedded store is owned by
    another process (`serve --workers`): read it through a private copy there (follower.py)."""
    store: Store
    if settings.store == "edge" and follower_dir is not None:
        from rag_server.store.follower import FollowerEdgeStore

        store = FollowerEdgeStore(settings.store_dir, follower_dir)
    elif settings.store == "edge":
        from rag_server.store.edge import EdgeStore

        store = EdgeStore(settings.store_dir)
    else:
        require(Extra.QDRANT, "RAG_STORE=qdrant")
        from qdrant_client import QdrantClient

        from rag_server.store.client import QdrantStore

        url = settings.qdrant_url
        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        if url == ":memory:":
            client, local = QdrantClient(location=":memory:"), True
        elif url.startswith(("http://", "https://")):
            client, local = QdrantClient(url=url, api_key=api_key), False
        else:
            client, local = QdrantClient(path=url), True
        store = QdrantStore(
            client,
            settings.qdrant_collection,
            local=local,
            shard_number=settings.qdrant_shard_number,
            replication_factor=settings.qdrant_replication_factor,
            write_consistency_factor=settings.qdrant_write_consistency_factor,
            alias_ttl_s=settings.qdrant_alias_ttl_s,
        )
    manifest = store.manifest()
    if dims is not None and manifest is not None and manifest.dims != dims:
        store.close()
        raise StoreError(
            f"the served generation {manifest.generation} has {manifest.dims}-dimensional vectors "
            f"({manifest.embedding_model}); the configured embedder makes {dims}"
        )
    return store
