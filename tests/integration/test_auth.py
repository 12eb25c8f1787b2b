"""API keys on a real grpc.aio server (127.0.0.1): off while the data dir has no key, on as soon as
`rag-server keys add` writes one (no restart), UNAUTHENTICATED / PERMISSION_DENIED with google.rpc.ErrorInfo,
health and reflection open, and a key revoked from the command line refused by the running server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from rag_server.api.calls import CORRELATION_HEADER
from rag_server.config import Settings
from rag_server.gen.rag.v1 import (
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    understanding_pb2,
    understanding_pb2_grpc,
)
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration


def rag_server(*argv: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "rag-server"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rag_server.cli"]
    return subprocess.run([*cmd, *argv], capture_output=True, text=True, timeout=120, check=False)


def add_key(data_dir: Path, name: str, scopes: str) -> str:
    proc = rag_server("keys", "add", name, "--scopes", scopes, "--data-dir", str(data_dir))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[-1]  # `| tail -1`


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"), (CORRELATION_HEADER, "auth-test-1"))


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path_factory.mktemp("auth"), load_sample_on_start=False, grace_period_s=5
    )
    server = await start_server(settings)
    yield server
    await server.stop(0)


@pytest.fixture(scope="module")
async def channel(running: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
        yield ch


@pytest.fixture(scope="module")
def keys(running: RunningServer) -> dict[str, str]:
    """Keys added from the command line while the server runs (the first one turns auth on)."""
    data_dir = running.app.settings.data_dir
    made = {name: add_key(data_dir, name, scopes)
            for name, scopes in (("reader", "query"), ("loader", "ingest"), ("root", "admin"))}
    text = (data_dir / "keys.json").read_text("utf-8")
    assert not [k for k in made.values() if k in text or k[len("frk_") :].split("_", 1)[1] in text]
    return made


async def refusal(
    call: Any, awaited: Any = None
) -> tuple[grpc.StatusCode, error_details_pb2.ErrorInfo, dict[str, str]]:
    """The refusal of `call` (awaited, or `awaited` for a stream's read): code, ErrorInfo, trailers."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await (call if awaited is None else awaited)
    status = await rpc_status.aio.from_call(call)
    assert status is not None and status.message == info.value.details()
    found = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(found) == 1
    error_info = error_details_pb2.ErrorInfo()
    found[0].Unpack(error_info)
    assert error_info.domain == "formulary-rag"
    trailers = dict(info.value.trailing_metadata() or ())
    return info.value.code(), error_info, trailers


async def test_without_keys_auth_is_off(running: RunningServer, channel: grpc.aio.Channel) -> None:
    assert not (running.app.settings.data_dir / "keys.json").exists()
    stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
    reply = await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)
    assert reply.loaded is False
    understood = await understanding_pb2_grpc.UnderstandingServiceStub(channel).Understand(
        understanding_pb2.UnderstandRequest(query="chống chỉ định của zelvorin"), metadata=bearer("junk"),
        timeout=10)
    assert understood.frame.query


async def test_keyless_and_unknown_keys_are_unauthenticated(
    channel: grpc.aio.Channel, keys: dict[str, str]
) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    code, info, trailers = await refusal(stub.ListDrugs(
        retrieval_pb2.ListDrugsRequest(), metadata=((CORRELATION_HEADER, "no-key-1"),), timeout=10))
    assert code == grpc.StatusCode.UNAUTHENTICATED and info.reason == "API_KEY_MISSING"
    assert dict(info.metadata) == {"method": "/rag.v1.RetrievalService/ListDrugs", "scope": "query"}
    assert trailers.get(CORRELATION_HEADER) == "no-key-1"
    wrong = keys["reader"][:-2] + ("AA" if not keys["reader"].endswith("AA") else "BB")
    for key in (wrong, "frk_0123456789abcdef_" + "x" * 43, "not-a-key"):
        code, info, _ = await refusal(stub.ListDrugs(retrieval_pb2.ListDrugsRequest(), metadata=bearer(key),
                                                     timeout=10))
        assert code == grpc.StatusCode.UNAUTHENTICATED and info.reason == "API_KEY_INVALID"
    code, info, _ = await refusal(stub.ListDrugs(
        retrieval_pb2.ListDrugsRequest(), metadata=(("authorization", f"Basic {keys['reader']}"),),
        timeout=10))
    assert code == grpc.StatusCode.UNAUTHENTICATED and info.reason == "API_KEY_INVALID"


async def test_scopes(channel: grpc.aio.Channel, keys: dict[str, str]) -> None:
    ingestion = ingestion_pb2_grpc.IngestionServiceStub(channel)
    retrieval = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    understanding = understanding_pb2_grpc.UnderstandingServiceStub(channel)
    question = understanding_pb2.UnderstandRequest(query="liều dùng của zelvorin")
    # query: reads, but may not ingest
    await understanding.Understand(question, metadata=bearer(keys["reader"]), timeout=10)
    await ingestion.GetCorpus(ingestion_pb2.GetCorpusRequest(), metadata=bearer(keys["reader"]), timeout=10)
    stream = ingestion.Ingest(ingestion_pb2.IngestRequest(path="x.pdf"), metadata=bearer(keys["reader"]),
                              timeout=10)
    code, info, _ = await refusal(stream, stream.read())
    assert code == grpc.StatusCode.PERMISSION_DENIED and info.reason == "SCOPE_MISSING"
    assert dict(info.metadata) == {"method": "/rag.v1.IngestionService/Ingest", "scope": "ingest",
                                   "key": "reader"}
    upload = ingestion.UploadDocument(iter([ingestion_pb2.UploadDocumentRequest(
        metadata=ingestion_pb2.UploadMetadata(filename="a.pdf", size_bytes=5))]),
        metadata=bearer(keys["reader"]), timeout=10)
    code, info, _ = await refusal(upload)
    assert code == grpc.StatusCode.PERMISSION_DENIED and info.metadata["scope"] == "ingest"
    # ingest: may ingest (the request itself is then judged: a path outside the roots), not read
    with pytest.raises(grpc.aio.AioRpcError) as judged:
        await ingestion.Ingest(ingestion_pb2.IngestRequest(path="/etc/passwd"),
                               metadata=bearer(keys["loader"]), timeout=10).read()
    assert judged.value.code() not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
    code, info, _ = await refusal(retrieval.ListDrugs(
        retrieval_pb2.ListDrugsRequest(), metadata=bearer(keys["loader"]), timeout=10))
    assert code == grpc.StatusCode.PERMISSION_DENIED and info.metadata["scope"] == "query"
    # admin: everything
    await understanding.Understand(question, metadata=bearer(keys["root"]), timeout=10)
    with pytest.raises(grpc.aio.AioRpcError) as judged:
        await ingestion.Ingest(ingestion_pb2.IngestRequest(path="/etc/passwd"),
                               metadata=bearer(keys["root"]), timeout=10).read()
    assert judged.value.code() not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)


async def test_malformed_requests_are_authenticated_first(
    channel: grpc.aio.Channel, keys: dict[str, str]
) -> None:
    """Bytes that are not a request are judged only after the key: keyless is UNAUTHENTICATED (not a
    parse error that tells a stranger anything), with a key INVALID_ARGUMENT; health and reflection stay
    open but are parsed too."""
    corrupt, bad_utf8 = b"\xff\xff\xff", b"\x0a\x02\xff\xfe"  # field 1 (query) holding invalid UTF-8
    retrieve = channel.unary_unary("/rag.v1.RetrievalService/Retrieve")
    ask = channel.unary_stream("/rag.v1.AnswerService/Ask")
    upload = channel.stream_unary("/rag.v1.IngestionService/UploadDocument")
    for raw in (corrupt, bad_utf8):
        no_key = ((CORRELATION_HEADER, "malformed-no-key"),)
        code, info, trailers = await refusal(retrieve(raw, metadata=no_key, timeout=10))
        assert code == grpc.StatusCode.UNAUTHENTICATED and info.reason == "API_KEY_MISSING"
        assert trailers.get(CORRELATION_HEADER) == "malformed-no-key"
        stream = ask(raw, metadata=no_key, timeout=10)
        code, info, _ = await refusal(stream, stream.read())
        assert code == grpc.StatusCode.UNAUTHENTICATED
        code, info, _ = await refusal(upload(iter([corrupt]), metadata=no_key, timeout=10))
        assert code == grpc.StatusCode.UNAUTHENTICATED
        code, info, _ = await refusal(upload(iter([corrupt]), metadata=bearer(keys["reader"]), timeout=10))
        assert code == grpc.StatusCode.PERMISSION_DENIED and info.reason == "SCOPE_MISSING"
        for call in (retrieve(raw, metadata=bearer(keys["reader"]), timeout=10),
                     upload(iter([corrupt]), metadata=bearer(keys["loader"]), timeout=10)):
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await call
            assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert dict(bad.value.trailing_metadata() or ()).get(CORRELATION_HEADER) == "auth-test-1"
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await check(corrupt, timeout=10)  # open to a keyless caller, and still parsed
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    reflection = channel.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await reflection(iter([corrupt]), timeout=10).read()
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_health_and_reflection_stay_open(channel: grpc.aio.Channel, keys: dict[str, str]) -> None:
    assert keys
    reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = [r async for r in stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]))]
    assert "rag.v1.RetrievalService" in {s.name for s in replies[0].list_services_response.service}


async def test_a_key_revoked_from_the_command_line_is_refused_at_once(
    running: RunningServer, channel: grpc.aio.Channel, keys: dict[str, str]
) -> None:
    data_dir = running.app.settings.data_dir
    temp = add_key(data_dir, "temp", "query")
    stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
    await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), metadata=bearer(temp), timeout=10)
    proc = rag_server("keys", "revoke", "temp", "--data-dir", str(data_dir))
    assert proc.returncode == 0, proc.stderr
    code, info, _ = await refusal(stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), metadata=bearer(temp),
                                                 timeout=10))
    assert code == grpc.StatusCode.UNAUTHENTICATED and info.reason == "API_KEY_INVALID"
    listed = rag_server("keys", "list", "--data-dir", str(data_dir))
    assert "temp" in listed.stdout and temp not in listed.stdout
    await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), metadata=bearer(keys["reader"]), timeout=10)


def test_the_start_line_says_how_to_call(running: RunningServer, keys: dict[str, str]) -> None:
    from rag_server.security.setup import describe_access

    line = describe_access(running.app.settings, running.port)
    assert "auth on" in line and "authorization: Bearer" in line and str(running.port) in line
    assert not [k for k in keys.values() if k in line]
