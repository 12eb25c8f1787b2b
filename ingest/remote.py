"""`rag-server ingest` against a data dir that a running server owns.

The embedded store is locked by the process that serves it, so instead of failing, the CLI hands the
PDF to that server: UploadDocument (client-streaming bytes), then Ingest on the uploaded path, showing
the same progress bars and summary. The server's own checks (size limit, PDF magic, gates, the atomic
generation switch) apply unchanged, and the corpus keeps serving throughout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from ingest.estimate import FullBookEstimate
from rag_server.client_channel import call_metadata, open_blocking_channel
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc

UPLOAD_PART_BYTES = 1024 * 1024


def running_server_target(address_file: Path) -> str | None:
    """host:port of a live server that owns the data dir, from its address file (Settings.address_file)."""
    try:
        info = json.loads(address_file.read_text(encoding="utf-8"))
        pid, target = int(info["pid"]), str(info["target"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, owned by someone else
    return target


def _parts(pdf: Path) -> Iterator[ingestion_pb2.UploadDocumentRequest]:
    size = pdf.stat().st_size
    yield ingestion_pb2.UploadDocumentRequest(
        metadata=ingestion_pb2.UploadMetadata(filename=pdf.name, size_bytes=size)
    )
    with pdf.open("rb") as handle:
        while part := handle.read(UPLOAD_PART_BYTES):
            yield ingestion_pb2.UploadDocumentRequest(chunk=part)


def describe_rpc_error(error: grpc.RpcError) -> str:
    """Code, message and any BadRequest / PreconditionFailure details, on one line each."""
    lines = [f"{error.code().name}: {error.details()}"]
    status = rpc_status.from_call(error)
    for detail in status.details if status else ():
        bad = error_details_pb2.BadRequest()
        pre = error_details_pb2.PreconditionFailure()
        if detail.Unpack(bad):
            lines += [f"  {v.field}: {v.description}" for v in bad.field_violations]
        elif detail.Unpack(pre):
            lines += [f"  {v.subject}: {v.description}" for v in pre.violations]
    return "\n".join(lines)


def is_bad_input(error: grpc.RpcError) -> bool:
    """The document itself was refused (not a PDF, corrupt, encrypted, no monographs, too large): the same
    exit code as a local ingest of it. A failed gate (precondition type GATE) is not bad input."""
    code = error.code()
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return True
    if code != grpc.StatusCode.FAILED_PRECONDITION:
        return False
    status = rpc_status.from_call(error)
    kinds: list[str] = []
    for detail in status.details if status else ():
        pre = error_details_pb2.PreconditionFailure()
        if detail.Unpack(pre):
            kinds += [v.type for v in pre.violations]
    return bool(kinds) and "GATE" not in kinds


def outcome_from_summary(summary: ingestion_pb2.IngestSummary) -> Any:
    """The summary in the shape ingest.cli.summary_table prints."""
    manifest = summary.manifest if summary.HasField("manifest") else None
    estimate = None
    if summary.HasField("full_book_estimate"):
        e = summary.full_book_estimate
        estimate = FullBookEstimate(
            monographs=e.monographs, available=e.available, note=e.note, pages=e.pages, chunks=e.chunks,
            parse_seconds=e.parse_seconds, embed_seconds=e.embed_seconds, embedding_model=e.embedding_model)
    return SimpleNamespace(
        document_id=summary.document_id,
        pages=summary.pages,
        monograph_count=summary.monograph_count,
        section_count=summary.section_count,
        chunk_count=summary.chunk_count,
        block_count=summary.block_count,
        inferred_folios=summary.inferred_folios,
        gates=list(summary.gates),
        failed_gates=[g for g in summary.gates if g.count],
        embeddings_computed=summary.embeddings_computed,
        embeddings_cached=summary.embeddings_cached,
        timings=[(t.stage, t.millis) for t in summary.timings],
        manifest=manifest,
        switched=summary.switched,
        message=summary.message,
        embed_rate=summary.embed_chunks_per_second or None,
        embed_concurrency=summary.embed_concurrency,
        estimate=estimate,
    )


def ingest_via_server(
    target: str,
    pdf: Path,
    *,
    embed_only: bool,
    resume: bool,
    check_only: bool,
    allow_gate_failures: bool,
    progress: Callable[[str, int, int, str], None],
    timeout_s: float = 6 * 3600,
) -> ingestion_pb2.IngestSummary:
    """Upload then ingest through the running server; raises grpc.RpcError on refusal."""
    options = [("grpc.max_send_message_length", 4 * UPLOAD_PART_BYTES)]
    metadata = call_metadata()  # $RAG_API_KEY (an `ingest` scope); TLS: --tls-* or $RAG_CLIENT_TLS_*
    with open_blocking_channel(target, options) as channel:
        stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
        progress("upload", 0, 1, pdf.name)
        uploaded = stub.UploadDocument(_parts(pdf), timeout=600, metadata=metadata)
        progress("upload", 1, 1, f"{uploaded.size_bytes} bytes")
        request = ingestion_pb2.IngestRequest(
            path=uploaded.path,
            embed_only=embed_only,
            recompute_embeddings=not resume,
            check_only=check_only,
            allow_gate_failures=allow_gate_failures,
        )
        summary: ingestion_pb2.IngestSummary | None = None
        for event in stub.Ingest(request, timeout=timeout_s, metadata=metadata):
            if event.HasField("progress"):
                p = event.progress
                progress(p.stage, p.done, p.total, p.message)
            elif event.HasField("summary"):
                summary = event.summary
        if summary is None:
            raise RuntimeError("the server closed the Ingest stream without a summary")
        return summary
