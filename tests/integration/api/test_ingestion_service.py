"""IngestionService on a real grpc.aio server (127.0.0.1, port 0) over a real aio channel: streamed progress
and summary, path confinement, one ingest at a time, cancellation, uploads (size limit, PDF magic), bad
input that changes nothing, GetCorpus. The PDFs are tiny FICTIONAL formularies parsed by the real parser."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pymupdf
import pytest
from fictional_chunks import write_tiny_pdf
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration

MANY = tuple(f"FICTADRUG{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(16))  # a slower ingest


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("ingest-svc")
    roots = {"data": base / "data", "pdfs": base / "pdfs", "outside": base / "outside"}
    for path in roots.values():
        path.mkdir()
    write_tiny_pdf(roots["pdfs"] / "tiny.pdf")
    write_tiny_pdf(roots["pdfs"] / "many.pdf", MANY)
    write_tiny_pdf(roots["outside"] / "secret.pdf")
    (roots["pdfs"] / "notes.pdf").write_text("not a pdf at all")
    os.symlink(roots["outside"] / "secret.pdf", roots["pdfs"] / "link.pdf")
    doc = pymupdf.open(roots["pdfs"] / "tiny.pdf")
    doc.save(roots["pdfs"] / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    doc.close()
    return roots


@pytest.fixture(scope="module")
async def running(dirs: dict[str, Path]) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0,
        host="127.0.0.1",
        data_dir=dirs["data"],
        ingest_roots=[dirs["pdfs"]],
        load_sample_on_start=False,
        upload_max_mb=1,
        embed_batch_size=2,
        grace_period_s=5,
    )
    server = await start_server(settings)
    yield server
    await server.stop(0)


@pytest.fixture(scope="module")
async def stub(running: RunningServer) -> AsyncIterator[ingestion_pb2_grpc.IngestionServiceStub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        yield ingestion_pb2_grpc.IngestionServiceStub(channel)


async def failure(call: Any) -> tuple[grpc.StatusCode, dict[str, str], list[tuple[str, str]]]:
    """Await a failing call: (code, BadRequest {field: description}, PreconditionFailure [(type, subj)])."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        _ = await call if not hasattr(call, "__aiter__") else [m async for m in call]
    status = await rpc_status.aio.from_call(call)
    fields: dict[str, str] = {}
    pre: list[tuple[str, str]] = []
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields.update({v.field: v.description for v in bad.field_violations})
        if detail.Is(error_details_pb2.PreconditionFailure.DESCRIPTOR):
            pf = error_details_pb2.PreconditionFailure()
            detail.Unpack(pf)
            pre.extend((v.type, v.subject) for v in pf.violations)
    return info.value.code(), fields, pre


async def corpus(stub: ingestion_pb2_grpc.IngestionServiceStub) -> ingestion_pb2.GetCorpusResponse:
    return await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)


async def ingest(stub: ingestion_pb2_grpc.IngestionServiceStub, path: str, **kw: Any) -> list[Any]:
    return [m async for m in stub.Ingest(ingestion_pb2.IngestRequest(path=path, **kw), timeout=120)]


async def test_01_empty_corpus_is_not_loaded(stub: ingestion_pb2_grpc.IngestionServiceStub) -> None:
    reply = await corpus(stub)
    assert not reply.loaded and not reply.manifest.generation


async def test_02_paths_outside_the_roots_are_refused(
    stub: ingestion_pb2_grpc.IngestionServiceStub, dirs: dict[str, Path]
) -> None:
    for path in (
        str(dirs["outside"] / "secret.pdf"),
        str(dirs["pdfs"] / ".." / "outside" / "secret.pdf"),
        str(dirs["pdfs"] / "link.pdf"),  # a symlink inside the root pointing outside it
        "/etc/passwd",
        "../outside/secret.pdf",
    ):
        call = stub.Ingest(ingestion_pb2.IngestRequest(path=path), timeout=10)
        code, _, _ = await failure(call)
        assert code == grpc.StatusCode.PERMISSION_DENIED, path
        details = await call.details() or ""
        assert "outside" in details or "not inside" in details, details
        assert str(dirs["data"]) not in details  # no server path is revealed
    code, _, _ = await failure(stub.Ingest(ingestion_pb2.IngestRequest(path="missing.pdf"), timeout=10))
    assert code == grpc.StatusCode.NOT_FOUND
    for bad in ("tiny\x00.pdf", "a" * 5000, "tiny.pdf\x1b[2J"):
        code, fields, _ = await failure(stub.Ingest(ingestion_pb2.IngestRequest(path=bad), timeout=10))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "path" in fields, bad[:20]
        assert bad not in fields["path"]
    assert not (await corpus(stub)).loaded


async def test_03_ingest_streams_progress_then_a_summary(
    stub: ingestion_pb2_grpc.IngestionServiceStub, dirs: dict[str, Path]
) -> None:
    messages = await ingest(stub, "tiny.pdf")  # relative to an ingest root
    progress = [m.progress for m in messages[:-1]]
    assert all(m.WhichOneof("event") == "progress" for m in messages[:-1])
    stages = [p.stage for p in progress]
    for stage in ("parse", "segment", "chunk", "gates", "embed", "sparse", "load", "verify", "switch"):
        assert stage in stages
    assert any(p.stage == "load" and p.done == p.total > 0 for p in progress)
    summary = messages[-1].summary
    assert summary.switched and summary.pages == 1
    # identical texts (the two fictional ATC / class lines) are embedded once
    assert 0 < summary.embeddings_computed < summary.manifest.chunk_count and summary.embeddings_cached == 0
    assert summary.manifest.monograph_count == 2
    assert all(g.count == 0 for g in summary.gates) and summary.gates
    assert {t.stage for t in summary.timings} >= {"parse", "embed", "load"}
    reply = await corpus(stub)
    assert reply.loaded and reply.manifest == summary.manifest
    assert reply.manifest.created_at.seconds > 0
    expected_id = hashlib.sha256((dirs["pdfs"] / "tiny.pdf").read_bytes()).hexdigest()[:16]
    assert reply.manifest.document_id == expected_id


async def test_04_bad_input_changes_nothing(stub: ingestion_pb2_grpc.IngestionServiceStub) -> None:
    before = await corpus(stub)
    code, fields, _ = await failure(stub.Ingest(ingestion_pb2.IngestRequest(path="notes.pdf"), timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "path" in fields
    code, _, pre = await failure(stub.Ingest(ingestion_pb2.IngestRequest(path="locked.pdf"), timeout=30))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and pre[0][0] == "ENCRYPTED"
    assert await corpus(stub) == before


async def test_05_check_only_reports_and_changes_nothing(
    stub: ingestion_pb2_grpc.IngestionServiceStub,
) -> None:
    before = await corpus(stub)
    messages = await ingest(stub, "many.pdf", check_only=True)
    summary = messages[-1].summary
    assert not summary.switched and summary.embeddings_computed == 0 and "nothing changed" in summary.message
    assert await corpus(stub) == before


async def test_06_one_ingest_at_a_time(stub: ingestion_pb2_grpc.IngestionServiceStub) -> None:
    first = stub.Ingest(ingestion_pb2.IngestRequest(path="many.pdf", recompute_embeddings=True), timeout=120)
    async for message in first:
        if message.progress.stage == "embed":
            break
    code, _, pre = await failure(stub.Ingest(ingestion_pb2.IngestRequest(path="tiny.pdf"), timeout=10))
    assert code == grpc.StatusCode.ABORTED and pre[0][0] == "INGEST_RUNNING"
    rest = [m async for m in first]
    assert rest[-1].summary.switched
    assert (await corpus(stub)).manifest.monograph_count == len(MANY)


async def test_07_a_cancelled_ingest_is_dropped(stub: ingestion_pb2_grpc.IngestionServiceStub) -> None:
    await ingest(stub, "tiny.pdf")
    before = await corpus(stub)
    call = stub.Ingest(ingestion_pb2.IngestRequest(path="many.pdf", recompute_embeddings=True), timeout=120)
    async for message in call:
        if message.progress.stage == "embed" and message.progress.done > 0:
            break
    call.cancel()
    for _ in range(200):  # the worker stops at its next progress event and releases the lock
        await asyncio.sleep(0.05)
        try:
            await ingest(stub, "tiny.pdf", check_only=True)
            break
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.ABORTED
    after = await corpus(stub)
    assert after == before


async def upload(
    stub: ingestion_pb2_grpc.IngestionServiceStub,
    data: bytes,
    *,
    declared: int | None = None,
    piece: int = 64 * 1024,
    metadata: bool = True,
) -> Any:
    async def parts() -> AsyncIterator[ingestion_pb2.UploadDocumentRequest]:
        if metadata:
            size = len(data) if declared is None else declared
            yield ingestion_pb2.UploadDocumentRequest(
                metadata=ingestion_pb2.UploadMetadata(filename="fictional.pdf", size_bytes=size)
            )
        for i in range(0, len(data), piece):
            yield ingestion_pb2.UploadDocumentRequest(chunk=data[i : i + piece])

    return stub.UploadDocument(parts(), timeout=30)


async def test_08_upload_then_ingest_by_document_id(
    stub: ingestion_pb2_grpc.IngestionServiceStub, dirs: dict[str, Path]
) -> None:
    data = write_tiny_pdf(dirs["outside"] / "upload.pdf", ("UPLOADIN",)).read_bytes()
    reply = await (await upload(stub, data, piece=1000))
    sha = hashlib.sha256(data).hexdigest()
    assert (reply.sha256, reply.document_id, reply.size_bytes) == (sha, sha[:16], len(data))
    assert reply.path == reply.document_id  # the reply never reveals a server path
    uploaded = dirs["data"] / "uploads" / f"{reply.document_id}.pdf"
    assert uploaded.read_bytes() == data
    by_path = await ingest(stub, reply.path, check_only=True)
    assert by_path[-1].summary.message.startswith("check only")
    assert uploaded.exists()  # a check keeps the upload for the real ingest
    messages = await ingest(stub, reply.document_id)
    assert messages[-1].summary.switched and messages[-1].summary.manifest.document_id == reply.document_id
    assert not uploaded.exists()  # removed once ingested


async def test_09_upload_limits_and_magic(
    stub: ingestion_pb2_grpc.IngestionServiceStub, dirs: dict[str, Path]
) -> None:
    uploads = dirs["data"] / "uploads"
    before = sorted(p.name for p in uploads.iterdir())
    code, fields, _ = await failure(await upload(stub, b"hello, not a pdf"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "chunk" in fields
    big = b"%PDF-1.7\n" + b"0" * (1024 * 1024 + 10)
    code, fields, _ = await failure(await upload(stub, big, declared=100))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "chunk" in fields  # enforced while streaming
    code, _, _ = await failure(await upload(stub, b"%PDF-1.7", declared=5 * 1024 * 1024))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED  # refused from the declared size
    code, fields, _ = await failure(await upload(stub, b"%PDF-1.7 x", metadata=False))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "metadata" in fields
    code, fields, _ = await failure(await upload(stub, b"%PDF-1.7 x", declared=3))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "metadata.size_bytes" in fields
    assert sorted(p.name for p in uploads.iterdir()) == before  # no partial files left behind
