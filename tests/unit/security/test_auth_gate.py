"""The API-key gate on its own: every rag.v1 method has a scope, refusals carry the right code and a
google.rpc.ErrorInfo, an admitted key becomes `current_caller`, and with no key file nothing changes."""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from rag_server.call_context import Caller, current_caller
from rag_server.gen.rag.v1 import answer_pb2, ingestion_pb2, retrieval_pb2, understanding_pb2
from rag_server.request_errors import ERROR_DOMAIN, RequestError
from rag_server.security.auth import METHOD_SCOPES, AuthGate, bearer_token, scope_for
from rag_server.security.keys import KeyStore


class FakeContext:
    def __init__(self, *metadata: tuple[str, str]) -> None:
        self.metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata


def _bearer(key: str) -> FakeContext:
    return FakeContext(("x-correlation-id", "c1"), ("authorization", f"Bearer {key}"))


def error_info(error: RequestError) -> error_details_pb2.ErrorInfo:
    status = error.to_status()
    rich = status_pb2.Status.FromString(dict(status.trailing_metadata)["grpc-status-details-bin"])
    assert rich.message == error.message
    infos = [d for d in rich.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1
    info = error_details_pb2.ErrorInfo()
    infos[0].Unpack(info)
    assert info.domain == ERROR_DOMAIN == "formulary-rag"
    return info


def _admit(gate: AuthGate, method: str, context: Any) -> Caller | None:
    """Run admit in a fresh context (as each call does) and return the caller it left there."""

    def run() -> Caller | None:
        gate.admit(method, context)
        return current_caller.get()

    return contextvars.copy_context().run(run)


def test_every_rag_method_has_its_scope() -> None:
    methods = {
        f"/{service.full_name}/{method.name}"
        for module in (understanding_pb2, retrieval_pb2, answer_pb2, ingestion_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    assert methods == set(METHOD_SCOPES)
    ingest = {"/rag.v1.IngestionService/Ingest", "/rag.v1.IngestionService/UploadDocument"}
    assert {m for m, s in METHOD_SCOPES.items() if s == "ingest"} == ingest
    assert all(s == "query" for m, s in METHOD_SCOPES.items() if m not in ingest)
    assert scope_for("/rag.v1.NewService/Thing") == "admin"  # unknown methods need admin


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ((), None),
        ((("authorization", "Bearer abc"),), "abc"),
        ((("authorization", "bearer  abc "),), "abc"),
        ((("authorization", "Basic abc"),), ""),
        ((("Authorization", "Bearer abc"),), "abc"),
    ],
)
def test_bearer_token(metadata: tuple[tuple[str, str], ...], expected: str | None) -> None:
    assert bearer_token(metadata) == expected


def test_no_key_file_admits_everyone(tmp_path: Path) -> None:
    gate = AuthGate(KeyStore(tmp_path))
    assert _admit(gate, "/rag.v1.IngestionService/Ingest", FakeContext()) is None
    assert _admit(gate, "/rag.v1.RetrievalService/Retrieve", _bearer("anything")) is None


def test_missing_and_unknown_keys_are_unauthenticated(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    store.add("reader", "query")
    gate = AuthGate(store)
    method = "/rag.v1.RetrievalService/Retrieve"
    with pytest.raises(RequestError) as missing:
        _admit(gate, method, FakeContext(("x-correlation-id", "c1")))
    assert missing.value.code == grpc.StatusCode.UNAUTHENTICATED
    info = error_info(missing.value)
    assert info.reason == "API_KEY_MISSING" and dict(info.metadata) == {"method": method, "scope": "query"}
    for bad in ("frk_nope", "", "Bearer"):
        with pytest.raises(RequestError) as invalid:
            _admit(gate, method, _bearer(bad))
        assert invalid.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert error_info(invalid.value).reason == "API_KEY_INVALID"


def test_a_key_without_the_scope_is_permission_denied(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    _, key = store.add("reader", "query")
    gate = AuthGate(store)
    for method in ("/rag.v1.IngestionService/Ingest", "/rag.v1.IngestionService/UploadDocument"):
        with pytest.raises(RequestError) as denied:
            _admit(gate, method, _bearer(key))
        assert denied.value.code == grpc.StatusCode.PERMISSION_DENIED
        info = error_info(denied.value)
        assert info.reason == "SCOPE_MISSING"
        assert dict(info.metadata) == {"method": method, "scope": "ingest", "key": "reader"}
        assert key not in denied.value.message


def test_admitted_key_is_the_current_caller(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    _, reader = store.add("reader", "query")
    _, admin = store.add("root", "admin")
    gate = AuthGate(store)
    assert _admit(gate, "/rag.v1.AnswerService/Ask", _bearer(reader)) == Caller("reader", ("query",))
    assert _admit(gate, "/rag.v1.IngestionService/Ingest", _bearer(admin)) == Caller("root", ("admin",))
    assert _admit(gate, "/rag.v1.Unknown/Method", _bearer(admin)) == Caller("root", ("admin",))
    with pytest.raises(RequestError):
        _admit(gate, "/rag.v1.Unknown/Method", _bearer(reader))


def test_refusals_never_echo_the_key(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    store.add("reader", "query")
    gate = AuthGate(store)
    guess = "frk_0123456789abcdef_" + "Z" * 43
    with pytest.raises(RequestError) as invalid:
        _admit(gate, "/rag.v1.RetrievalService/Retrieve", _bearer(guess))
    status = invalid.value.to_status()
    assert guess not in status.details and guess.encode() not in dict(status.trailing_metadata)[
        "grpc-status-details-bin"]
