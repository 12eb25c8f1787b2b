"""Server start: open the embedder and the store, refuse a corpus built with another embedding model,
and load the fictional sample formulary into an empty store when settings.load_sample_on_start is set."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rag_server.domain import Manifest

if TYPE_CHECKING:
    from rag_server.app import App
    from rag_server.providers.base import Embedder

log = logging.getLogger("rag_server.startup")

SAMPLE_FILENAME = "sample-formulary.pdf"
SAMPLE_PDF = Path(__file__).resolve().parent / "sample" / SAMPLE_FILENAME  # package data (FICTIONAL)


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


def sample_pdf(data_dir: Path) -> Path:
    """The fictional sample formulary (package data) copied under data_dir/sample, where an operator can
    re-ingest it from (RAG_INGEST_ROOTS=<data_dir>/sample)."""
    target = data_dir / "sample" / SAMPLE_FILENAME
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(SAMPLE_PDF, tmp)
    os.replace(tmp, target)
    return target


def _load_sample(app: App) -> None:
    from ingest.pipeline import run_ingest

    assert app.store is not None and app.embedder is not None
    pdf = sample_pdf(app.settings.data_dir)
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
