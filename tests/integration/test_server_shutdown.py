"""Graceful shutdown while a server-streaming call (IngestionService/Ingest of the fictional sample) is in
flight: the call finishes, health turns NOT_SERVING, new calls are refused. In process via
RunningServer.stop(), and in a subprocess via a real SIGTERM to `rag-server serve`."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc
from rag_server.server import start_server
from rag_server.store.startup import sample_pdf

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pdf = sample_pdf(tmp_path_factory.mktemp("sample-src"))
    assert pdf is not None and pdf.is_file(), "the fictional sample formulary PDF could not be written"
    return pdf


async def test_stop_lets_inflight_ingest_finish(tmp_path: Path, sample: Path) -> None:
    settings = Settings(  # type: ignore[call-arg]
        port=0,
        data_dir=tmp_path / "data",
        load_sample_on_start=False,
        ingest_roots=[sample.parent],
        grace_period_s=300,
    )
    running = await start_server(settings)
    target = f"127.0.0.1:{running.port}"
    stop: asyncio.Task[None] | None = None
    try:
        async with grpc.aio.insecure_channel(target) as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
            assert (await watch.read()).status == SERVING
            ingest = ingestion_pb2_grpc.IngestionServiceStub(channel).Ingest(
                ingestion_pb2.IngestRequest(path=sample.name)
            )
            first = await ingest.read()
            assert first.WhichOneof("event") == "progress"

            stop = asyncio.create_task(running.stop())
            assert (await asyncio.wait_for(watch.read(), 30)).status == NOT_SERVING
            assert not stop.done(), "stop() returned while a call was still streaming"
            # A health watcher's stream ends after NOT_SERVING, so it cannot hold stop() for the whole grace.
            assert await asyncio.wait_for(watch.read(), 30) is grpc.aio.EOF
            assert await watch.code() == grpc.StatusCode.OK

            async with grpc.aio.insecure_channel(target) as other:  # new calls are refused while draining
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await health_pb2_grpc.HealthStub(other).Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

            rest = []
            while (message := await ingest.read()) is not grpc.aio.EOF:
                rest.append(message)
            assert await ingest.code() == grpc.StatusCode.OK
            assert rest and rest[-1].WhichOneof("event") == "summary"
            summary = rest[-1].summary
            assert summary.switched, summary.message
            assert summary.manifest.chunk_count > 0
            await asyncio.wait_for(stop, 60)

        async with grpc.aio.insecure_channel(target) as after:
            with pytest.raises(grpc.aio.AioRpcError) as refused_after:
                await health_pb2_grpc.HealthStub(after).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert refused_after.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        if stop is None:
            await running.stop(0)
        elif not stop.done():
            await stop


def test_sigterm_during_streaming_ingest(rag_server_process: Callable[..., Any], sample: Path) -> None:
    server = rag_server_process(
        env={
            "RAG_LOAD_SAMPLE_ON_START": "false",
            "RAG_INGEST_ROOTS": str(sample.parent),
            "RAG_GRACE_PERIOD_S": "300",
        }
    )
    with grpc.insecure_channel(server.target) as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=""), timeout=300
        )
        assert next(watch).status == SERVING
        stream = ingestion_pb2_grpc.IngestionServiceStub(channel).Ingest(
            ingestion_pb2.IngestRequest(path=sample.name), timeout=300
        )
        first = next(stream)
        assert first.WhichOneof("event") == "progress"

        server.proc.send_signal(signal.SIGTERM)
        assert next(watch).status == NOT_SERVING
        assert list(watch) == []  # the watch stream ends once the server is shutting down
        assert server.proc.poll() is None, "the process exited before the in-flight call finished"

        rest = list(stream)
        assert stream.code() == grpc.StatusCode.OK
        assert rest and rest[-1].WhichOneof("event") == "summary"
        assert rest[-1].summary.switched, rest[-1].summary.message

    assert server.proc.wait(60) == 0, server.output()
    assert "shutting down" in server.output()
    with grpc.insecure_channel(server.target) as after:
        with pytest.raises(grpc.RpcError) as refused:
            health_pb2_grpc.HealthStub(after).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
