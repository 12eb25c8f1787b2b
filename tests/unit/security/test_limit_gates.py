"""The rate-limit and stream-cap gates on a fake clock: bursts, refill, one bucket per key (one shared
bucket without auth), RESOURCE_EXHAUSTED with RetryInfo and ErrorInfo, slots released exactly once."""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from rag_server.call_context import Caller, current_caller
from rag_server.config import Settings
from rag_server.request_errors import RequestError
from rag_server.security.auth import AuthGate
from rag_server.security.limits import ASK_METHOD, RateLimitGate, StreamCapGate
from rag_server.security.setup import gates_for

CTX: Any = None  # the gates never read the context
RETRIEVE = "/rag.v1.RetrievalService/Retrieve"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def details(error: RequestError) -> tuple[float, error_details_pb2.ErrorInfo]:
    status = error.to_status()
    rich = status_pb2.Status.FromString(dict(status.trailing_metadata)["grpc-status-details-bin"])
    retry, info = error_details_pb2.RetryInfo(), error_details_pb2.ErrorInfo()
    found = {d.type_url.rsplit("/", 1)[1] for d in rich.details}
    assert found == {"google.rpc.RetryInfo", "google.rpc.ErrorInfo"}
    for d in rich.details:
        (d.Unpack(retry) if d.Is(retry.DESCRIPTOR) else d.Unpack(info))
    return retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9, info


def as_caller(name: str | None, fn: Any) -> Any:
    def run() -> Any:
        current_caller.set(Caller(name, ("query",)) if name else None)
        return fn()

    return contextvars.copy_context().run(run)


def test_a_burst_then_refusal_with_the_time_to_the_next_token() -> None:
    clock = Clock()
    gate = RateLimitGate(rate_per_s=2, burst=3, clock=clock)
    for _ in range(3):
        gate.admit(RETRIEVE, CTX)
    with pytest.raises(RequestError) as refused:
        gate.admit(RETRIEVE, CTX)
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    delay, info = details(refused.value)
    assert delay == pytest.approx(0.5, abs=0.002)
    assert info.reason == "RATE_LIMITED" and info.metadata["method"] == RETRIEVE
    clock.now += 0.25
    with pytest.raises(RequestError) as again:
        gate.admit(RETRIEVE, CTX)
    assert details(again.value)[0] == pytest.approx(0.25, abs=0.002)  # refusals take no token
    clock.now += 0.25
    gate.admit(RETRIEVE, CTX)  # one token refilled
    clock.now += 60
    for _ in range(3):  # refills up to the burst, never past it
        gate.admit(RETRIEVE, CTX)
    with pytest.raises(RequestError):
        gate.admit(RETRIEVE, CTX)


def test_each_key_has_its_own_bucket_and_keyless_callers_share_one() -> None:
    clock = Clock()
    gate = RateLimitGate(rate_per_s=1, burst=1, clock=clock)
    as_caller("alice", lambda: gate.admit(RETRIEVE, CTX))
    with pytest.raises(RequestError) as refused:
        as_caller("alice", lambda: gate.admit(RETRIEVE, CTX))
    assert details(refused.value)[1].metadata["key"] == "alice"
    as_caller("bob", lambda: gate.admit(RETRIEVE, CTX))
    as_caller(None, lambda: gate.admit(RETRIEVE, CTX))
    with pytest.raises(RequestError):
        as_caller(None, lambda: gate.admit(RETRIEVE, CTX))


def test_the_stream_cap_counts_ask_only_and_releases_once() -> None:
    gate = StreamCapGate(max_streams=2)
    assert gate.admit(RETRIEVE, CTX) is None
    first, second = gate.admit(ASK_METHOD, CTX), gate.admit(ASK_METHOD, CTX)
    assert first is not None and second is not None and gate.open == 2
    with pytest.raises(RequestError) as refused:
        gate.admit(ASK_METHOD, CTX)
    assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    delay, info = details(refused.value)
    assert 0.1 <= delay <= 10 and info.reason == "STREAM_CAP_REACHED"
    assert dict(info.metadata) == {"method": ASK_METHOD, "max_streams": "2"}
    first()
    first()  # a second release of the same slot frees nothing more
    assert gate.open == 1
    third = gate.admit(ASK_METHOD, CTX)
    assert third is not None and gate.open == 2
    second()
    third()
    assert gate.open == 0


def test_gates_for_follows_the_settings(tmp_path: Path) -> None:
    default = gates_for(Settings(data_dir=tmp_path))  # type: ignore[call-arg]
    assert [type(g) for g in default] == [AuthGate, StreamCapGate]  # no rate limit unless set
    limited = gates_for(Settings(  # type: ignore[call-arg]
        data_dir=tmp_path, rate_limit_per_s=5, rate_limit_burst=7, ask_max_streams=0))
    assert [type(g) for g in limited] == [AuthGate, RateLimitGate]
    assert (limited[1].rate, limited[1].burst) == (5, 7)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        RateLimitGate(0, 1)
    with pytest.raises(ValueError):
        StreamCapGate(0)
