"""IngestionService: PDF -> store, upload, manifest.

Ingest runs the blocking pipeline in a worker thread; its progress events cross into the event loop
through an asyncio queue and stream out as IngestProgress, then one IngestSummary closes the stream.
One ingest at a time (a second one is ABORTED). Paths must resolve, symlinks followed, inside a
configured ingest root or the uploads dir. A client that cancels stops the worker at its next progress
event, and the half-written generation is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import timestamp_pb2

from ingest.errors import IngestInputError, InputErrorKind
from rag_server.api import limits as L
from rag_server.api.uploads import UploadsFolder
from rag_server.api.validation import Violations
from rag_server.app import App
from rag_server.config import Settings
from rag_server.domain import Manifest
from rag_server.gen.rag.v1 import common_pb2, ingestion_pb2, ingestion_pb2_grpc
from rag_server.providers.base import Embedder, ProviderError
from rag_server.request_errors import RequestError, failed_precondition, invalid_argument, not_found
from rag_server.store.base import Store

log = logging.getLogger("rag_server.api.ingestion")

DOCUMENT_ID = re.compile(r"^[0-9a-f]{16}$")
PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024  # the PDF header may follow up to 1 KiB of leading bytes

# ingest.errors.IngestInputError.kind -> status
_INPUT_STATUS = {
    InputErrorKind.NOT_PDF: grpc.StatusCode.INVALID_ARGUMENT,
    InputErrorKind.CORRUPT: grpc.StatusCode.INVALID_ARGUMENT,
    InputErrorKind.ENCRYPTED: grpc.StatusCode.FAILED_PRECONDITION,
    InputErrorKind.NO_MONOGRAPHS: grpc.StatusCode.FAILED_PRECONDITION,
}


class IngestCancelled(Exception):
    """The caller went away; raised inside the worker at its next progress event."""


def manifest_to_proto(manifest: Manifest) -> common_pb2.CorpusManifest:
    created = timestamp_pb2.Timestamp()
    with contextlib.suppress(ValueError):
        created.FromDatetime(datetime.fromisoformat(manifest.created_at))
    return common_pb2.CorpusManifest(
        corpus_sha=manifest.corpus_sha,
        embedding_model=manifest.embedding_model,
        dims=manifest.dims,
        monograph_count=manifest.monograph_count,
        section_count=manifest.section_count,
        chunk_count=manifest.chunk_count,
        block_count=manifest.block_count,
        created_at=created,
        generation=manifest.generation,
        document_id=manifest.document_id,
        schema_version=manifest.schema_version,
    )


def allowed_roots(settings: Settings) -> list[Path]:
    return [root.resolve() for root in (*settings.ingest_roots, settings.uploads_dir)]


NO_ROOTS = (
    "no ingest root is configured: start the server with RAG_INGEST_ROOTS=/folder/with/pdfs (comma-"
    "separated folders), or upload the PDF with UploadDocument and ingest its document_id"
)


def resolve_ingest_path(raw: str, settings: Settings) -> Path:
    """The PDF `raw` names (a path or an uploaded document_id), only if it resolves inside an allowed root.

    Bad input is INVALID_ARGUMENT (empty, too long, a NUL or other control character); a path that exists
    but resolves (symlinks followed) outside every root is PERMISSION_DENIED; one that does not exist is
    NOT_FOUND; with no root configured, a path (not a document_id) is FAILED_PRECONDITION saying how to
    configure one. Messages quote the caller's path cut short, never a server path."""
    v = Violations()
    v.check_text("path", raw, L.PATH_CHARS)
    if any(len(part.encode("utf-8")) > L.PATH_PART_BYTES for part in Path(raw).parts):
        v.add("path", f"each folder or file name must be at most {L.PATH_PART_BYTES} bytes")
    v.raise_if_any()
    try:
        return _resolve_inside(raw, settings)
    except OSError as exc:  # unreadable components and the like: no such document for this caller
        raise not_found(
            f"no such document: '{L.echo(raw)}'", ("path", f"cannot be read ({type(exc).__name__})")
        ) from exc


def _resolve_inside(raw: str, settings: Settings) -> Path:
    roots = allowed_roots(settings)
    if DOCUMENT_ID.fullmatch(raw):
        candidates = [settings.uploads_dir / f"{raw}.pdf"]
    else:
        if not settings.ingest_roots:
            raise failed_precondition(NO_ROOTS, "RAG_INGEST_ROOTS", kind="CONFIGURATION")
        candidates = [Path(raw)] if Path(raw).is_absolute() else [root / raw for root in roots]
    try:
        resolved = [(c, c.resolve()) for c in candidates]
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, an unreadable component
        raise invalid_argument("path cannot be resolved", ("path", type(exc).__name__)) from exc
    inside = [r for _, r in resolved if _is_inside(r, roots)]
    for path in inside:
        if path.is_file():
            return path
    escaping = [c for c, r in resolved if not _is_inside(r, roots) and (c.is_symlink() or r.exists())]
    if escaping and not inside:
        raise RequestError(
            grpc.StatusCode.PERMISSION_DENIED,
            f"'{L.echo(raw)}' resolves outside the ingest roots (a symlink or '..' leading out); "
            "only files inside RAG_INGEST_ROOTS or the uploads are read",
        )
    if not inside and Path(raw).is_absolute():
        raise RequestError(
            grpc.StatusCode.PERMISSION_DENIED,
            f"'{L.echo(raw)}' is not inside RAG_INGEST_ROOTS or the uploads",
        )
    raise not_found(
        f"no such document: '{L.echo(raw)}'", ("path", "no file at this path inside the ingest roots")
    )


def _is_inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _error_for(exc: BaseException) -> RequestError:
    from ingest.pipeline import GateFailure

    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, IngestInputError):
        code = _INPUT_STATUS.get(exc.kind, grpc.StatusCode.INVALID_ARGUMENT)
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            return invalid_argument(f"{exc.kind}: {exc.message}", ("path", exc.message))
        return RequestError(
            code, f"{exc.kind}: {exc.message}", precondition=[(exc.kind.upper(), "path", exc.message)]
        )
    if isinstance(exc, GateFailure):
        gates = [
            (
                "GATE",
                g.name,
                f"{g.count} offending item(s)"
                + (f", e.g. {', '.join(g.examples[:3])}" if g.examples else ""),
            )
            for g in exc.outcome.failed_gates
        ]
        return RequestError(grpc.StatusCode.FAILED_PRECONDITION, str(exc), precondition=gates)
    if isinstance(exc, ProviderError):
        return RequestError(
            grpc.StatusCode.UNAVAILABLE, f"embedding provider failed: {exc}; nothing was switched"
        )
    return RequestError(grpc.StatusCode.INTERNAL, f"ingest failed: {exc}; nothing was switched")


class IngestionServicer(ingestion_pb2_grpc.IngestionServiceServicer):
    def __init__(self, app: App, progress: Callable[[str, int, int], None] | None = None) -> None:
        self.app = app
        self.progress = progress  # (stage, done, total) of each event, for the metrics (observability)
        self._busy_lock = threading.Lock()
        self._busy: str | None = None
        self.uploads = UploadsFolder.of(app.settings)  # quota and retention (swept from server.py)

    def _ready(self) -> tuple[Store, Embedder]:
        if self.app.store is None or self.app.embedder is None:
            raise failed_precondition("the store is not open (server still starting?)", "store")
        return self.app.store, self.app.embedder

    def _claim(self, path: Path) -> None:
        with self._busy_lock:
            if self._busy is not None:
                raise RequestError(
                    grpc.StatusCode.ABORTED,
                    f"another ingest is running ({self._busy}); retry when it has finished",
                    precondition=[("INGEST_RUNNING", self._busy, "one ingest at a time")],
                )
            self._busy = str(path)

    def _release(self) -> None:
        with self._busy_lock:
            self._busy = None

    async def Ingest(
        self, request: ingestion_pb2.IngestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[ingestion_pb2.IngestResponse]:
        v = Violations()
        if not request.path:
            v.add("path", "must name a PDF inside a configured ingest root, or an uploaded document path")
        v.raise_if_any()
        store, embedder = self._ready()
        pdf = resolve_ingest_path(request.path, self.app.settings)
        self._claim(pdf)

        from ingest.pipeline import IngestOutcome, run_ingest

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, int, int, str] | None] = asyncio.Queue()
        cancelled = threading.Event()

        def post(item: tuple[str, int, int, str] | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def progress(stage: str, done: int, total: int, message: str) -> None:
            if cancelled.is_set():
                raise IngestCancelled("the caller cancelled the ingest")
            post((stage, done, total, message))

        def work() -> IngestOutcome:
            try:
                with self.uploads.hold(pdf):  # not swept while read
                    return run_ingest(
                        pdf,
                        self.app.settings,
                        store=store,
                        embedder=embedder,
                        embed_only=request.embed_only,
                        resume=not request.recompute_embeddings,
                        check_only=request.check_only,
                        allow_gate_failures=request.allow_gate_failures,
                        progress=progress,
                    )
            finally:
                if not request.check_only:
                    self.uploads.discard(pdf)  # an upload is removed once ingested, whatever the outcome
                self._release()
                post(None)

        try:
            future = loop.run_in_executor(None, work)
        except BaseException:
            self._release()
            raise
        try:
            while (item := await queue.get()) is not None:
                stage, done, total, message = item
                if self.progress is not None:
                    self.progress(stage, done, total)
                yield ingestion_pb2.IngestResponse(
                    progress=ingestion_pb2.IngestProgress(
                        stage=stage, done=done, total=total, message=message
                    )
                )
            try:
                outcome = await future
            except Exception as exc:
                log.warning("ingest of %s failed: %s", pdf, exc)
                raise _error_for(exc) from exc
        except asyncio.CancelledError:
            cancelled.set()
            raise
        if outcome.switched and store is self.app.store:
            # The new generation's catalog and indexes, built before the summary says it is served.
            await loop.run_in_executor(self.app.executor, self.app.refresh)
        log.info("ingest of %s ended: %s", pdf.name, outcome.message)  # under the call's correlation id
        yield ingestion_pb2.IngestResponse(summary=_summary(outcome))

    async def UploadDocument(
        self,
        request_iterator: AsyncIterator[ingestion_pb2.UploadDocumentRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> ingestion_pb2.UploadDocumentResponse:
        settings = self.app.settings
        limit = settings.upload_max_mb * 1024 * 1024
        uploads = settings.uploads_dir
        uploads.mkdir(parents=True, exist_ok=True)
        tmp = uploads / f".upload-{uuid.uuid4().hex}.part"
        self.uploads.begin(tmp)  # each chunk is counted against RAG_UPLOADS_MAX_TOTAL_MB before it is written
        digest = hashlib.sha256()
        size, head, declared, seen_metadata = 0, b"", 0, False
        try:
            async with _refused_after_drain(request_iterator):
                with tmp.open("wb") as handle:
                    async for message in request_iterator:
                        part = message.WhichOneof("part")
                        if not seen_metadata:
                            if part != "metadata":
                                raise invalid_argument(
                                    "the first message must be metadata",
                                    ("metadata", "send UploadMetadata first"),
                                )
                            seen_metadata, declared = True, message.metadata.size_bytes
                            _check_metadata(message.metadata, limit, settings.upload_max_mb)
                            self.uploads.check_room(declared)
                            continue
                        if part != "chunk":
                            raise invalid_argument(
                                "metadata sent twice", ("metadata", "only the first message")
                            )
                        size += len(message.chunk)
                        if size > limit:
                            raise _too_large(settings.upload_max_mb)
                        if len(head) < MAGIC_WINDOW:
                            head += message.chunk[: MAGIC_WINDOW - len(head)]
                        self.uploads.reserve(tmp, len(message.chunk))
                        digest.update(message.chunk)
                        handle.write(message.chunk)
                    handle.flush()
                    os.fsync(handle.fileno())
            if not seen_metadata:
                raise invalid_argument("empty upload", ("metadata", "send UploadMetadata, then the bytes"))
            if size == 0:
                raise invalid_argument(
                    "no bytes were uploaded", ("chunk", "send the PDF bytes after the metadata")
                )
            if declared and declared != size:
                raise invalid_argument(
                    "size mismatch", ("metadata.size_bytes", f"declared {declared} bytes, received {size}")
                )
            if PDF_MAGIC not in head:
                raise invalid_argument(
                    "not a PDF", ("chunk", "the file does not start with the %PDF- header")
                )
            sha = digest.hexdigest()
            document_id = sha[:16]
            final = uploads / f"{document_id}.pdf"
            self.uploads.commit(tmp, final)
        finally:
            self.uploads.abort(tmp)  # the partial file and its bytes, unless committed
        # The reply names the document, never a server path: Ingest takes the document_id as its path.
        return ingestion_pb2.UploadDocumentResponse(
            document_id=document_id, path=document_id, size_bytes=size, sha256=sha
        )

    async def GetCorpus(
        self, request: ingestion_pb2.GetCorpusRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ingestion_pb2.GetCorpusResponse:
        store, _ = self._ready()
        manifest = await asyncio.to_thread(store.manifest)
        if manifest is None:
            return ingestion_pb2.GetCorpusResponse(loaded=False)
        return ingestion_pb2.GetCorpusResponse(manifest=manifest_to_proto(manifest), loaded=True)


DRAIN_MAX_BYTES = 1024 * 1024  # read (and discard) at most this much of a refused upload ...
DRAIN_MAX_S = 2.0  # ... for at most this long, before the refusal is sent


class _refused_after_drain(contextlib.AbstractAsyncContextManager[None]):
    """A refusal raised while an upload streams in is sent once the client has finished sending (its
    remaining messages read and discarded, within DRAIN_MAX_BYTES / DRAIN_MAX_S): a client-streaming call
    ended by the server while the client still writes reaches the client as INTERNAL "Internal error from
    Core" now and then (a race in grpc's client, grpc/grpc#27240), never as the INVALID_ARGUMENT it was."""

    def __init__(self, requests: AsyncIterator[ingestion_pb2.UploadDocumentRequest]) -> None:
        self.requests = requests

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, RequestError):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._discard(), DRAIN_MAX_S)
        return False

    async def _discard(self) -> None:
        seen = 0
        async for message in self.requests:
            seen += len(message.chunk)
            if seen > DRAIN_MAX_BYTES:
                return


def _too_large(max_mb: int) -> RequestError:
    return RequestError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"upload exceeds {max_mb} MiB",
        violations=[("chunk", f"the document must be at most {max_mb} MiB (RAG_UPLOAD_MAX_MB)")],
    )


def _check_metadata(metadata: ingestion_pb2.UploadMetadata, limit: int, max_mb: int) -> None:
    v = Violations()
    v.check_text("metadata.filename", metadata.filename, L.FILENAME_CHARS)
    v.raise_if_any("invalid upload metadata")
    if metadata.size_bytes < 0:
        raise invalid_argument("negative size", ("metadata.size_bytes", "must be >= 0"))
    if metadata.size_bytes > limit:
        raise _too_large(max_mb)


def _summary(outcome: Any) -> ingestion_pb2.IngestSummary:
    estimate = getattr(outcome, "estimate", None)  # ingest.estimate.FullBookEstimate
    return ingestion_pb2.IngestSummary(
        manifest=manifest_to_proto(outcome.manifest) if outcome.manifest is not None else None,
        gates=[
            ingestion_pb2.GateResult(name=g.name, count=g.count, examples=list(g.examples)[:10])
            for g in outcome.gates
        ],
        switched=outcome.switched,
        pages=outcome.pages,
        embeddings_computed=outcome.embeddings_computed,
        embeddings_cached=outcome.embeddings_cached,
        timings=[common_pb2.StageTiming(stage=s, millis=ms) for s, ms in outcome.timings],
        message=outcome.message,
        document_id=outcome.document_id,
        monograph_count=outcome.monograph_count,
        section_count=outcome.section_count,
        chunk_count=outcome.chunk_count,
        block_count=outcome.block_count,
        inferred_folios=getattr(outcome, "inferred_folios", 0),
        embed_chunks_per_second=getattr(outcome, "embed_rate", None) or 0.0,
        embed_concurrency=getattr(outcome, "embed_concurrency", 0),
        full_book_estimate=None if estimate is None else ingestion_pb2.FullBookEstimate(
            monographs=estimate.monographs, available=estimate.available, note=estimate.note,
            pages=estimate.pages, chunks=estimate.chunks, parse_seconds=estimate.parse_seconds,
            embed_seconds=estimate.embed_seconds, embedding_model=estimate.embedding_model,
        ),
    )
