"""Server start: refuse a corpus built with another embedding model, and load the fictional sample
formulary (package data, copied; never rendered here) into an empty store when
settings.load_sample_on_start is set. App.start calls `open_corpus` with the embedder and the store it
composed."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rag_server.config import Settings
from rag_server.domain import Manifest
from rag_server.lifecycle import StartupError

if TYPE_CHECKING:
    from rag_server.providers.base import Embedder
    from rag_server.store.base import Store

log = logging.getLogger("rag_server.startup")

SAMPLE_FILENAME = "sample-formulary.pdf"
SAMPLE_PDF = Path(__file__).resolve().parent / "sample" / SAMPLE_FILENAME  # package data (FICTIONAL)


__all__ = ["SAMPLE_FILENAME", "SAMPLE_PDF", "StartupError", "check_compatible", "open_corpus", "sample_pdf"]


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


def _load_sample(settings: Settings, store: Store, embedder: Embedder) -> None:
    from ingest.pipeline import run_ingest

    pdf = sample_pdf(settings.data_dir)
    outcome = run_ingest(pdf, settings, store=store, embedder=embedder, resume=True)
    log.info("loaded the fictional sample formulary: %s", outcome.message)


async def open_corpus(settings: Settings, embedder: Embedder, store: Store, *,
                      load_sample: bool | None = None) -> None:
    """The model check (the store is closed and StartupError raised on a mismatch), then the sample load
    into an empty store (`load_sample`, default settings.load_sample_on_start: only the process that owns
    ingestion loads it, never a follower worker of `serve --workers`)."""
    try:
        check_compatible(store.manifest(), embedder)
    except StartupError:
        store.close()
        raise
    if load_sample is None:
        load_sample = settings.load_sample_on_start
    if store.manifest() is None and load_sample:
        try:
            await asyncio.to_thread(_load_sample, settings, store, embedder)
        except Exception:  # an empty store still serves (retrieval answers CORPUS_NOT_LOADED)
            log.exception("loading the fictional sample formulary failed; the store stays empty")
