"""The call plumbing of every method: gates may refuse a call (with google.rpc details) and are released
when it ends, whatever its end; observers see each call's method, status code and duration; health stays
open. A real grpc.aio server on 127.0.0.1 with a raw-bytes test method."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from rag_server.api.calls import CORRELATION_HEADER, Plumbing, Registrar
from rag_server.lifecycle import Lifecycle
from rag_server.request_errors import RequestError

pytestmark = pytest.mark.integration
METHOD = "/test.Echo/Call"


class DenyGate:
    def __init__(self) -> None:
        self.admitted = 0
        self.released = 0

    def admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> Callable[[], None] | None:
        if ("x-deny", "1") in tuple(context.invocation_metadata() or ()):
            raise RequestError(grpc.StatusCode.PERMISSION_DENIED, "denied by the test gate")
        self.admitted += 1
        return self.release

    def release(self) -> None:
        self.released += 1


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, grpc.StatusCode]] = []

    def finished(self, method: str, code: grpc.StatusCode, seconds: float) -> None:
        assert seconds >= 0
        self.calls.append((method, code))


async def _echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    if request == b"boom":
        raise RequestError(grpc.StatusCode.INVALID_ARGUMENT, "bad", violations=[("body", "boom")])
    if request == b"crash":
        raise RuntimeError("a bug")
    return request


@pytest.fixture
async def served() -> AsyncIterator[tuple[grpc.aio.Channel, DenyGate, Recorder]]:
    gate, recorder = DenyGate(), Recorder()
    server = grpc.aio.server()
    registrar: Any = Registrar(server, Plumbing(Lifecycle(), [gate], [recorder]))
    registrar.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "test.Echo", {"Call": grpc.unary_unary_rpc_method_handler(_echo)})])
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), registrar)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield channel, gate, recorder
    await server.stop(0)


async def test_gates_refuse_and_release_and_observers_see_every_end(
    served: tuple[grpc.aio.Channel, DenyGate, Recorder],
) -> None:
    channel, gate, recorder = served
    call = channel.unary_unary(METHOD)
    assert await call(b"hi", timeout=5) == b"hi"
    with pytest.raises(grpc.aio.AioRpcError) as denied:
        await call(b"hi", metadata=(("x-deny", "1"), (CORRELATION_HEADER, "deny-1")), timeout=5)
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert dict(denied.value.trailing_metadata() or ()).get(CORRELATION_HEADER) == "deny-1"
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await call(b"boom", timeout=5)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as crashed:
        await call(b"crash", timeout=5)
    assert crashed.value.code() == grpc.StatusCode.UNKNOWN
    assert (gate.admitted, gate.released) == (3, 3)  # every admitted call released, whatever its end
    codes = [code for method, code in recorder.calls if method == METHOD]
    assert codes == [grpc.StatusCode.OK, grpc.StatusCode.PERMISSION_DENIED,
                     grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNKNOWN]


async def test_health_stays_open_to_a_gate_that_refuses(
    served: tuple[grpc.aio.Channel, DenyGate, Recorder],
) -> None:
    channel, gate, recorder = served
    stub = health_pb2_grpc.HealthStub(channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(), metadata=(("x-deny", "1"),), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    assert gate.admitted == 0 and recorder.calls[-1] == ("/grpc.health.v1.Health/Check", grpc.StatusCode.OK)
