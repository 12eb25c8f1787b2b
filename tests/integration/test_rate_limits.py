"""Request limits on real grpc.aio servers (127.0.0.1): a burst past the rate limit is RESOURCE_EXHAUSTED with
google.rpc.RetryInfo and a call after that delay succeeds; each key has its own bucket; health is never
limited; the cap on concurrent Ask streams refuses one stream too many and frees its slot when a stream
ends, finished or cancelled."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from rag_server.api.calls import Plumbing, Registrar
from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc
from rag_server.lifecycle import Lifecycle
from rag_server.security.keys import KeyStore
from rag_server.security.limits import ASK_METHOD, StreamCapGate
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration

RATE, BURST = 1.0, 3


def details(error: grpc.aio.AioRpcError) -> tuple[float | None, str]:
    """(RetryInfo delay in seconds, ErrorInfo reason) of a refusal."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None
    delay, reason = None, ""
    for detail in status.details:
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            delay = retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
        elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
    return delay, reason


@pytest.fixture(scope="module")
async def limited(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path_factory.mktemp("limits"), load_sample_on_start=False, grace_period_s=5,
        rate_limit_per_s=RATE, rate_limit_burst=BURST,
    )
    server = await start_server(settings)
    yield server
    await server.stop(0)


async def _burst(stub: Any, n: int, metadata: tuple[tuple[str, str], ...] = ()) -> list[Any]:
    request = ingestion_pb2.GetCorpusRequest()
    calls = [stub.GetCorpus(request, metadata=metadata, timeout=10) for _ in range(n)]
    return await asyncio.gather(*calls, return_exceptions=True)


async def test_a_burst_past_the_limit_then_a_retry_after_the_delay(limited: RunningServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{limited.port}") as channel:
        stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
        began = time.monotonic()
        results = await _burst(stub, 10)
        elapsed = time.monotonic() - began
        refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
        served = len(results) - len(refused)
        assert BURST <= served <= BURST + int(elapsed * RATE) + 1, (served, elapsed)
        assert refused and {r.code() for r in refused} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        delay, reason = details(refused[-1])
        assert reason == "RATE_LIMITED"
        assert delay is not None and 0 < delay <= 1 / RATE + 0.001
        # health is never limited, even now
        health = health_pb2_grpc.HealthStub(channel)
        for _ in range(5):
            reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        # a refusal right now says how long to wait; after that wait the call goes through
        try:
            await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            wait, _ = details(err)
            assert wait is not None
            await asyncio.sleep(wait + 0.05)
        reply = await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)
        assert reply.loaded is False


async def test_each_key_has_its_own_bucket(limited: RunningServer) -> None:
    store = KeyStore(limited.app.settings.data_dir)
    _, first = store.add("first", "query")
    _, second = store.add("second", "query")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{limited.port}") as channel:
        stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
        results = await _burst(stub, 8, (("authorization", f"Bearer {first}"),))
        refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
        assert refused and all(r.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for r in refused)
        # the other key still has its whole burst
        results = await _burst(stub, BURST, (("authorization", f"Bearer {second}"),))
        assert not [r for r in results if isinstance(r, BaseException)]
    store.path.unlink()  # auth off again for the other tests of this module


# --- the Ask stream cap, on the real plumbing with a stand-in Ask that streams until released ---------


class SlowAsk:
    def __init__(self) -> None:
        self.finish = asyncio.Event()
        self.started = 0

    async def ask(self, request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[bytes]:
        self.started += 1
        yield b"progress"
        await self.finish.wait()
        yield b"final"


@pytest.fixture
async def capped() -> AsyncIterator[tuple[grpc.aio.Channel, StreamCapGate, SlowAsk]]:
    gate, ask = StreamCapGate(max_streams=2), SlowAsk()
    server = grpc.aio.server()
    registrar: Any = Registrar(server, Plumbing(Lifecycle(), [gate]))
    registrar.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "rag.v1.AnswerService", {"Ask": grpc.unary_stream_rpc_method_handler(ask.ask)})])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield channel, gate, ask
    ask.finish.set()
    await server.stop(0)


async def test_the_ask_stream_cap(capped: tuple[grpc.aio.Channel, StreamCapGate, SlowAsk]) -> None:
    channel, gate, ask = capped
    method = channel.unary_stream(ASK_METHOD)
    first, second = method(b"q", timeout=20), method(b"q", timeout=20)
    assert await first.read() == b"progress" and await second.read() == b"progress"
    assert gate.open == 2
    third = method(b"q", timeout=20)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await third.read()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    delay, reason = details(refused.value)
    assert reason == "STREAM_CAP_REACHED" and delay is not None and 0.1 <= delay <= 10
    assert ask.started == 2  # the refused stream never reached the handler
    # a cancelled stream frees its slot
    second.cancel()
    await _until(lambda: gate.open == 1)
    fourth = method(b"q", timeout=20)
    assert await fourth.read() == b"progress"
    # streams that finish free theirs
    ask.finish.set()
    assert await first.read() == b"final" and await fourth.read() == b"final"
    assert await first.read() is grpc.aio.EOF and await fourth.read() is grpc.aio.EOF
    await _until(lambda: gate.open == 0)


async def _until(condition: Any, timeout: float = 10.0) -> None:
    ends = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < ends, "condition never became true"
        await asyncio.sleep(0.02)


def test_settings_reach_the_gates(tmp_path: Path) -> None:
    from rag_server.security.limits import RateLimitGate
    from rag_server.security.setup import gates_for

    settings = Settings(  # type: ignore[call-arg]
        data_dir=tmp_path, rate_limit_per_s=RATE, rate_limit_burst=BURST, ask_max_streams=3
    )
    gates = gates_for(settings)
    rate = next(g for g in gates if isinstance(g, RateLimitGate))
    cap = next(g for g in gates if isinstance(g, StreamCapGate))
    assert (rate.rate, rate.burst, cap.max_streams) == (RATE, BURST, 3)
