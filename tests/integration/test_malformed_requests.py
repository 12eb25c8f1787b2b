"""Bytes that are not the method's request message, sent to every kind of RPC of a real server (grpc.aio on
127.0.0.1) with a generic channel: corrupt wire data and a string field holding invalid UTF-8 (protobuf
refuses both) are INVALID_ARGUMENT with a google.rpc.BadRequest violation on `request` naming the message,
and the caller's x-correlation-id in the trailers; never grpc's UNKNOWN "Unexpected DecodeError"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from grpc_status import rpc_status

from rag_server.api.calls import CORRELATION_HEADER
from rag_server.config import Settings
from rag_server.gen.rag.v1 import answer_pb2, ingestion_pb2, retrieval_pb2, understanding_pb2
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration

CORRUPT = b"\xff\xff\xff\xff\xff"  # a field tag that never ends: "wire format was corrupt"
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"


def _key(number: int) -> bytes:
    """The tag of a length-delimited field (wire type 2), as a varint."""
    value, out = (number << 3) | 2, bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def bad_utf8(message: Descriptor) -> bytes:
    """`message` on the wire with its first string field (nested messages searched) holding b"\\xff\\xfe":
    well-formed protobuf, refused only because a proto3 string must be UTF-8."""
    for field in message.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            return _key(field.number) + b"\x02\xff\xfe"
    for field in message.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type is not None:
            inner = bad_utf8(field.message_type)
            if inner:
                return _key(field.number) + bytes([len(inner)]) + inner
    return b""


def malformed(message: Descriptor) -> list[tuple[str, bytes]]:
    return [("corrupt", CORRUPT), ("bad-utf8", bad_utf8(message))]


UNARY = {
    "/rag.v1.UnderstandingService/Understand": understanding_pb2.UnderstandRequest.DESCRIPTOR,
    "/rag.v1.RetrievalService/Retrieve": retrieval_pb2.RetrieveRequest.DESCRIPTOR,
    "/rag.v1.RetrievalService/LookupIndication": retrieval_pb2.LookupIndicationRequest.DESCRIPTOR,
    "/rag.v1.RetrievalService/AssessPatient": retrieval_pb2.AssessPatientRequest.DESCRIPTOR,
    "/grpc.health.v1.Health/Check": health_pb2.HealthCheckRequest.DESCRIPTOR,
}
SERVER_STREAM = {
    "/rag.v1.AnswerService/Ask": answer_pb2.AskRequest.DESCRIPTOR,
    "/rag.v1.IngestionService/Ingest": ingestion_pb2.IngestRequest.DESCRIPTOR,
    "/grpc.health.v1.Health/Watch": health_pb2.HealthCheckRequest.DESCRIPTOR,
}


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path_factory.mktemp("malformed"), load_sample_on_start=False, grace_period_s=5
    )
    server = await start_server(settings)
    yield server
    await server.stop(0)


@pytest.fixture(scope="module")
async def channel(running: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
        yield ch


def meta(cid: str) -> tuple[tuple[str, str], ...]:
    return ((CORRELATION_HEADER, cid),)


async def refused(call: Any, awaited: Any, cid: str, message: Descriptor) -> str:
    """`awaited` fails with INVALID_ARGUMENT, a BadRequest on `request` naming `message`, and `cid` in the
    trailers; the violation's description is returned."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await awaited
    error = info.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.code(), error.details())
    assert dict(error.trailing_metadata() or ()).get(CORRELATION_HEADER) == cid
    status = await rpc_status.aio.from_call(call)
    assert status is not None and status.message == error.details()
    violations = []
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            violations += [(v.field, v.description) for v in bad.field_violations]
    assert len(violations) == 1, violations
    field, description = violations[0]
    assert field == "request"
    assert description.startswith(f"not a valid {message.full_name}: "), description
    return str(description)


def test_the_invalid_utf8_payload_is_otherwise_well_formed() -> None:
    streamed = (ingestion_pb2.UploadDocumentRequest.DESCRIPTOR,
                reflection_pb2.ServerReflectionRequest.DESCRIPTOR)
    for descriptor in (*UNARY.values(), *SERVER_STREAM.values(), *streamed):
        raw = bad_utf8(descriptor)
        assert raw, descriptor.full_name
        valid = raw.replace(b"\xff\xfe", b"ok")  # the same bytes with a valid string parse
        message_factory.GetMessageClass(descriptor).FromString(valid)


async def test_unary_calls(channel: grpc.aio.Channel) -> None:
    for method, message in UNARY.items():
        call_of = channel.unary_unary(method)  # no serializers: bytes as they are
        for kind, raw in malformed(message):
            cid = f"u-{kind}-{method.rsplit('/', 1)[1]}"
            call = call_of(raw, metadata=meta(cid), timeout=10)
            description = await refused(call, call, cid, message)
            assert ("corrupt" if kind == "corrupt" else "UTF-8") in description, description


async def test_server_streams(channel: grpc.aio.Channel) -> None:
    for method, message in SERVER_STREAM.items():
        stream_of = channel.unary_stream(method)
        for kind, raw in malformed(message):
            cid = f"s-{kind}-{method.rsplit('/', 1)[1]}"
            call = stream_of(raw, metadata=meta(cid), timeout=10)
            await refused(call, call.read(), cid, message)


async def test_client_stream_upload(channel: grpc.aio.Channel) -> None:
    message = ingestion_pb2.UploadDocumentRequest.DESCRIPTOR
    upload = channel.stream_unary("/rag.v1.IngestionService/UploadDocument")
    good = ingestion_pb2.UploadDocumentRequest(
        metadata=ingestion_pb2.UploadMetadata(filename="a.pdf", size_bytes=10)).SerializeToString()
    for kind, raw in malformed(message):
        for first in (True, False):  # the first message, or one after a valid metadata message
            cid = f"c-{kind}-{first}"
            parts = [raw] if first else [good, raw]
            call = upload(iter(parts), metadata=meta(cid), timeout=10)
            await refused(call, call, cid, message)


async def test_reflection(channel: grpc.aio.Channel) -> None:
    message = reflection_pb2.ServerReflectionRequest.DESCRIPTOR
    info = channel.stream_stream(REFLECTION)
    good = reflection_pb2.ServerReflectionRequest(list_services="").SerializeToString()
    for kind, raw in malformed(message):
        cid = f"r-{kind}"
        call = info(iter([good, raw]), metadata=meta(cid), timeout=10)
        first = reflection_pb2.ServerReflectionResponse.FromString(await call.read())
        assert "rag.v1.RetrievalService" in {s.name for s in first.list_services_response.service}
        await refused(call, call.read(), cid, message)


async def test_a_well_formed_call_still_works_on_the_same_channel(channel: grpc.aio.Channel) -> None:
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    reply = health_pb2.HealthCheckResponse.FromString(
        await check(health_pb2.HealthCheckRequest().SerializeToString(), timeout=10))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    get_corpus = channel.unary_unary("/rag.v1.IngestionService/GetCorpus")
    corpus = ingestion_pb2.GetCorpusResponse.FromString(await get_corpus(b"", timeout=10))
    assert corpus.loaded is False
