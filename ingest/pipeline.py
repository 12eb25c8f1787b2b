"""Flow A end to end: build_chunks -> gates -> embed (cache) -> BM25 -> load a new generation -> switch.

`run_ingest` is what the CLI (`rag-server ingest`), the IngestionService and the server's sample load
call. It never leaves a half-loaded corpus serving: a bad input, a failed gate, an exception or an
interrupt before the switch leaves the previous generation (and its manifest) in place.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.calibrate import indication_dense_floor
from ingest.embed_cache import embed_cached
from ingest.estimate import FullBookEstimate, estimate_full_book
from ingest.load import load_generation as _load_generation
from ingest.load import make_manifest, sparse_vectors
from rag_server.config import Settings
from rag_server.domain import ChunkKind, Manifest
from rag_server.providers.base import Embedder
from rag_server.store.base import Store
from rag_server.vocabulary.clinical import load_clinical

StageProgress = Callable[[str, int, int, str], None]
BuildFn = Callable[..., Any]


class IngestError(RuntimeError):
    """The ingest stopped before switching; `outcome` says how far it got."""

    def __init__(self, message: str, outcome: IngestOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class GateFailure(IngestError):
    """At least one gate is non-zero and allow_gate_failures was not given."""


@dataclass
class IngestOutcome:
    pdf_path: str
    document_id: str = ""
    pdf_sha256: str = ""
    pages: int = 0
    monograph_count: int = 0
    section_count: int = 0
    chunk_count: int = 0
    block_count: int = 0
    gates: list[Any] = field(default_factory=list)  # ingest.build.Gate
    inferred_folios: int = 0  # pages whose folio was inferred from their neighbours
    diagnostics: list[Any] = field(default_factory=list)  # ingest.diagnose.GateDiagnosis, per failed gate
    embeddings_computed: int = 0
    embeddings_cached: int = 0
    manifest: Manifest | None = None
    switched: bool = False
    timings: list[tuple[str, float]] = field(default_factory=list)  # (stage, milliseconds)
    message: str = ""
    build_seconds: float = 0.0  # PDF -> chunks + gates (parse, segment, chunk, gates)
    embed_seconds: float = 0.0  # computing the embeddings not in the cache
    embed_concurrency: int = 0  # embedding batches allowed in flight at once
    embedding_model: str = ""
    book_monographs: int = 0  # monographs in the full book (RAG_FULL_BOOK_MONOGRAPHS), for `estimate`

    @property
    def failed_gates(self) -> list[Any]:
        return [g for g in self.gates if g.count]

    @property
    def embed_rate(self) -> float | None:
        """Texts embedded per second in this run (cache hits excluded); None when none were."""
        if self.embeddings_computed and self.embed_seconds > 0:
            return self.embeddings_computed / self.embed_seconds
        return None

    @property
    def estimate(self) -> FullBookEstimate:
        """The full book with the configured embedder, from this run's rates (ingest.estimate)."""
        return estimate_full_book(
            self.book_monographs, pages=self.pages, monographs=self.monograph_count, chunks=self.chunk_count,
            build_seconds=self.build_seconds, embedded=self.embeddings_computed,
            embed_seconds=self.embed_seconds, embedding_model=self.embedding_model)


class _StageClock:
    """Times stages from the progress events: a stage lasts from its first event to the next stage's."""

    def __init__(self, outcome: IngestOutcome, forward: StageProgress | None) -> None:
        self.outcome = outcome
        self.forward = forward
        self.stage: str | None = None
        self.started = 0.0

    def __call__(self, stage: str, done: int, total: int, message: str) -> None:
        if stage != self.stage:
            self.close()
            self.stage, self.started = stage, time.perf_counter()
        if self.forward is not None:
            self.forward(stage, done, total, message)

    def close(self) -> None:
        if self.stage is not None:
            self.outcome.timings.append((self.stage, (time.perf_counter() - self.started) * 1000.0))
            self.stage = None


def _default_build(settings: Settings) -> BuildFn:
    # ingest.build.build_chunks is implemented alongside; resolved at call time
    fn: BuildFn = importlib.import_module("ingest.build").build_chunks
    return functools.partial(fn, workers=settings.ingest_workers)


def embed_concurrency(settings: Settings, embedder: Embedder) -> int:
    """Embedding batches in flight at once: RAG_EMBED_CONCURRENCY, or (0) the embedder's own choice
    (`concurrent_batches`: 1 for the offline engine, which already uses every core in one call)."""
    return settings.embed_concurrency or max(1, int(getattr(embedder, "concurrent_batches", 1)))


def run_ingest(
    pdf_path: Path | str,
    settings: Settings,
    *,
    store: Store,
    embedder: Embedder,
    embed_only: bool = False,
    resume: bool = True,
    check_only: bool = False,
    allow_gate_failures: bool = False,
    progress: StageProgress | None = None,
    build: BuildFn | None = None,
) -> IngestOutcome:
    """Ingest one PDF. Raises ingest.build.IngestInputError for bad input, GateFailure for failed
    gates, and whatever stopped the load otherwise; in every such case nothing was switched."""
    outcome = IngestOutcome(pdf_path=str(pdf_path), embedding_model=embedder.model,
                            book_monographs=settings.full_book_monographs)
    clock = _StageClock(outcome, progress)
    try:
        return _run(
            pdf_path,
            settings,
            store,
            embedder,
            outcome,
            clock,
            build or _default_build(settings),
            embed_only=embed_only,
            resume=resume,
            check_only=check_only,
            allow_gate_failures=allow_gate_failures,
        )
    finally:
        clock.close()


def _run(
    pdf_path: Path | str,
    settings: Settings,
    store: Store,
    embedder: Embedder,
    outcome: IngestOutcome,
    clock: _StageClock,
    build: BuildFn,
    *,
    embed_only: bool,
    resume: bool,
    check_only: bool,
    allow_gate_failures: bool,
) -> IngestOutcome:
    started = time.perf_counter()
    result = build(Path(pdf_path), max_tokens=settings.chunk_max_tokens, progress=clock)
    outcome.build_seconds = time.perf_counter() - started
    chunks = list(result.chunks)
    outcome.document_id, outcome.pdf_sha256, outcome.pages = (
        result.document_id,
        result.pdf_sha256,
        result.pages,
    )
    outcome.monograph_count, outcome.section_count = result.monograph_count, result.section_count
    outcome.chunk_count = len(chunks)
    outcome.block_count = sum(1 for c in chunks if c.chunk_kind is ChunkKind.BLOCK)
    outcome.gates = list(result.gates)
    outcome.inferred_folios = int(getattr(result, "inferred_folios", 0))
    outcome.diagnostics = list(getattr(result, "diagnostics", []))
    failed = outcome.failed_gates
    gate_note = (
        f"{len(failed)} gate(s) failed: " + ", ".join(f"{g.name}={g.count}" for g in failed)
        if failed
        else "all gates 0"
    )
    if check_only:
        outcome.message = f"check only: {gate_note}; nothing changed"
        return outcome
    if not chunks:
        from ingest.errors import IngestInputError, InputErrorKind

        raise IngestInputError(InputErrorKind.NO_MONOGRAPHS, f"{pdf_path}: no chunks were produced")
    if failed and not allow_gate_failures:
        outcome.message = f"{gate_note}; not loaded (pass allow_gate_failures to override)"
        raise GateFailure(outcome.message, outcome)

    concurrency = embed_concurrency(settings, embedder)
    outcome.embed_concurrency = concurrency
    first: list[tuple[int, float]] = []  # the first event: the cache's hits, and when computing began

    def embed_progress(done: int, total: int) -> None:
        if not first:
            first.append((done, time.perf_counter()))
        computed, elapsed = done - first[0][0], time.perf_counter() - first[0][1]
        rate = f"{computed / elapsed:.1f} chunks/s, " if computed and elapsed > 0 else ""
        # the rate first: the CLI shows the first 48 characters
        clock("embed", done, total, f"{rate}{concurrency} at once, {embedder.model}")

    dense, stats = embed_cached(
        embedder,
        settings.cache_dir,
        [c.text for c in chunks],
        "document",
        batch_size=settings.embed_batch_size,
        resume=resume,
        progress=embed_progress,
        concurrency=concurrency,
    )
    outcome.embeddings_computed, outcome.embeddings_cached = stats.computed, stats.cached
    outcome.embed_seconds = stats.seconds
    rate = f"; {stats.rate:.1f} chunks/s embedded" if stats.rate else ""
    if embed_only:
        outcome.message = (
            f"embeddings ready ({stats.computed} computed, {stats.cached} cached{rate}); "
            "embed-only: not loaded"
        )
        return outcome
    sparse = sparse_vectors(chunks, clock, cache_root=settings.cache_dir / "sparse" if resume else None)
    clock("calibrate", 0, 1, "dense floor of the indication fallback")
    floor = indication_dense_floor(chunks, dense, embedder, load_clinical().calibration)
    clock("calibrate", 1, 1, f"indication dense floor {floor:.4f}")

    def manifest_for(generation: str) -> Manifest:
        return make_manifest(
            chunks,
            generation=generation,
            embedding_model=embedder.model,
            dims=embedder.dims,
            document_id=result.document_id,
            monograph_count=result.monograph_count,
            section_count=result.section_count,
            indication_dense_floor=floor,
        )

    outcome.manifest = _load_generation(
        store,
        chunks,
        dense,
        sparse,
        dims=embedder.dims,
        batch_size=settings.load_batch_size,
        manifest_for=manifest_for,
        progress=clock,
    )
    outcome.switched = True
    outcome.message = (
        f"serving generation {outcome.manifest.generation}: {len(chunks)} chunks; {gate_note}{rate}"
    )
    return outcome
