"""Server start: open the embedder and the store, refuse a corpus built with another embedding model,
and load the fictional sample formulary into an empty store when settings.load_sample_on_start is set."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_server.domain import Manifest

if TYPE_CHECKING:
    from rag_server.app import App
    from rag_server.providers.base import Embedder

log = logging.getLogger("rag_server.store")

SAMPLE_FILENAME = "sample-formulary.pdf"


class StartupError(RuntimeError):
    """The server must not start (e.g. the served corpus does not match the configured embedder)."""


def check_compatible(manifest: Manifest | None, embedder: Embedder) -> None:
    if manifest is None:
        return
    if manifest.embedding_model != embedder.model or manifest.dims != embedder.dims:
        raise StartupError(
            f"the served corpus (generation {manifest.generation}) was built with embedding model "
            f"{manifest.embedding_model!r} ({manifest.dims} dims), but the configured embedder is "
            f"{embedder.model!r} ({embedder.dims} dims); re-ingest with this embedder "
            f"(rag-server ingest PDF) or configure RAG_EMBEDDER to match"
        )


def sample_pdf(data_dir: Path) -> Path | None:
    """The fictional sample formulary as a PDF under data_dir (generated once), or None if unavailable."""
    target = data_dir / "sample" / SAMPLE_FILENAME
    if target.exists():
        return target
    try:  # ingest.fixtures.sample_formulary is written alongside; imported lazily
        sample_formulary: Any = importlib.import_module("ingest.fixtures.sample_formulary")
    except ImportError:
        sample_formulary = None
    render = getattr(sample_formulary, "render_sample", None)
    if render is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(render().pdf)
        os.replace(tmp, target)
        return target
    bundled = sorted((Path(__file__).resolve().parent.parent / "sample").glob("*.pdf"))
    return bundled[0] if bundled else None


def _load_sample(app: App) -> None:
    from ingest.pipeline import run_ingest

    assert app.store is not None and app.embedder is not None
    pdf = sample_pdf(app.settings.data_dir)
    if pdf is None:
        log.warning("store is empty and no sample formulary generator is available; serving nothing")
        return
    outcome = run_ingest(pdf, app.settings, store=app.store, embedder=app.embedder, resume=True)
    log.info("loaded the fictional sample formulary: %s", outcome.message)


async def open_corpus(app: App) -> None:
    """Called by App.start: embedder + store, the model check, then the sample load when empty."""
    from rag_server.providers.factory import build_embedder
    from rag_server.store.factory import open_store

    settings = app.settings
    if app.embedder is None:
        app.embedder = build_embedder(settings)
    if app.store is None:
        app.store = await asyncio.to_thread(open_store, settings)
    try:
        check_compatible(app.store.manifest(), app.embedder)
    except StartupError:
        app.store.close()
        app.store = None
        raise
    if app.store.manifest() is None and settings.load_sample_on_start:
        try:
            await asyncio.to_thread(_load_sample, app)
        except Exception:  # an empty store still serves (retrieval answers CORPUS_NOT_LOADED)
            log.exception("loading the fictional sample formulary failed; the store stays empty")
