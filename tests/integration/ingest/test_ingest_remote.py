"""`rag-server ingest` on a data dir a running server owns: the CLI hands the PDF to that server
(UploadDocument + Ingest) instead of failing on the store lock; bad input leaves the corpus serving."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pymupdf
import pytest
from fictional_chunks import write_tiny_pdf

from rag_server.cli import main
from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc
from rag_server.server import start_server, write_address_file

pytestmark = pytest.mark.integration


async def test_cli_ingests_through_the_running_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    settings = Settings(port=0, data_dir=data, load_sample_on_start=False)  # type: ignore[arg-type]
    running = await start_server(settings)
    address = write_address_file(settings, running.port)
    pdf = write_tiny_pdf(tmp_path / "tiny.pdf")
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(pdf.read_bytes()[:400])
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
            assert not (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest())).loaded

            code = await asyncio.to_thread(main, ["ingest", str(pdf), "--data-dir", str(data)])
            out = capsys.readouterr()
            assert code == 0, out.err
            assert "ingesting through it" in out.err and "switched" in out.err
            first = (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest())).manifest
            assert first.chunk_count == 12 and first.generation

            code = await asyncio.to_thread(main, ["ingest", str(corrupt), "--data-dir", str(data)])
            out = capsys.readouterr()
            assert code == 2 and "INVALID_ARGUMENT" in out.err
            after = (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest())).manifest
            assert after == first  # nothing changed; the same generation still serves

            # an encrypted PDF is bad input (FAILED_PRECONDITION from the server): exit 2, as locally
            doc = pymupdf.open(pdf)
            locked = tmp_path / "locked.pdf"
            doc.save(locked, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="mat-khau", owner_pw="chu")
            doc.close()
            code = await asyncio.to_thread(main, ["ingest", str(locked), "--data-dir", str(data)])
            out = capsys.readouterr()
            assert code == 2 and "FAILED_PRECONDITION: encrypted" in out.err, out.err
            assert (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest())).manifest == first

            code = await asyncio.to_thread(main, ["ingest", str(pdf), "--data-dir", str(data)])
            again = (await stub.GetCorpus(ingestion_pb2.GetCorpusRequest())).manifest
            assert code == 0
            assert (again.corpus_sha, again.chunk_count) == (first.corpus_sha, first.chunk_count)
    finally:
        address.unlink(missing_ok=True)
        await running.stop(0)
