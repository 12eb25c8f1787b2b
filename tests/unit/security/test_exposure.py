"""Which hosts are loopback, and the gate refusing keyless ingestion on a server bound beyond it."""

from __future__ import annotations

import contextvars
from pathlib import Path
from typing import Any

import grpc
import pytest

from rag_server.call_context import Caller, current_caller
from rag_server.config import Settings
from rag_server.request_errors import RequestError
from rag_server.security import setup
from rag_server.security.auth import AuthGate, conversation_owner
from rag_server.security.exposure import ExposedIngestGate, is_loopback
from rag_server.security.keys import KeyStore


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST",
                                  "::ffff:127.0.0.1"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "", "10.0.0.5", "192.168.1.2", "my-host",
                                  "::ffff:10.0.0.1", "128.0.0.1", "fe80::1%eth0"])
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def _settings(tmp_path: Path, host: str) -> Settings:
    return Settings(data_dir=tmp_path, host=host)  # type: ignore[call-arg]


def test_the_gate_is_only_added_beyond_loopback(tmp_path: Path) -> None:
    loopback = setup.gates_for(_settings(tmp_path, "127.0.0.1"))
    assert not any(isinstance(g, ExposedIngestGate) for g in loopback)
    gates = setup.gates_for(_settings(tmp_path, "0.0.0.0"))
    assert isinstance(gates[0], AuthGate) and isinstance(gates[1], ExposedIngestGate)
    assert gates[0].store is gates[1].store  # one view of keys.json


def test_keyless_ingestion_is_refused_until_a_key_exists(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path)
    gate = ExposedIngestGate(keys, _settings(tmp_path, "0.0.0.0"))
    context: Any = None
    for method in ("/rag.v1.IngestionService/Ingest", "/rag.v1.IngestionService/UploadDocument"):
        with pytest.raises(RequestError) as info:
            gate.admit(method, context)
        assert info.value.code == grpc.StatusCode.PERMISSION_DENIED
        assert info.value.reason == "INGEST_NEEDS_API_KEY"
        assert "rag-server keys add NAME --scopes ingest" in info.value.message
        assert str(tmp_path) not in info.value.message  # no server path to the caller
    for method in ("/rag.v1.RetrievalService/Retrieve", "/rag.v1.IngestionService/GetCorpus",
                   "/rag.v1.AnswerService/Ask"):
        assert gate.admit(method, context) is None
    keys.add("loader", "ingest")
    assert gate.admit("/rag.v1.IngestionService/Ingest", context) is None  # the auth gate decides now


def test_the_start_warning_only_when_exposed_without_a_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert setup.warn_if_exposed(_settings(tmp_path, "127.0.0.1"), 50051) is False
    assert setup.warn_if_exposed(_settings(tmp_path, "0.0.0.0"), 50051) is True
    assert ("rag-server: listening on 0.0.0.0:50051 with no API key: ingestion is refused; anyone who "
            "reaches this port can query") in capsys.readouterr().err
    KeyStore(tmp_path).add("loader", "ingest")
    assert setup.warn_if_exposed(_settings(tmp_path, "0.0.0.0"), 50051) is False


@pytest.mark.parametrize(("caller", "owner"), [
    (None, "anonymous"), (Caller("ward-7", ("query",)), "ward-7"),
    (Caller("anonymous", ("query",)), "key:anonymous"),  # a key never owns the anonymous conversations
])
def test_conversation_owner(caller: Caller | None, owner: str) -> None:
    def read() -> str:
        current_caller.set(caller)
        return conversation_owner()

    assert contextvars.copy_context().run(read) == owner
