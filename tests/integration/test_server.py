"""Server behaviour on a real grpc.aio server bound to 127.0.0.1:0: health, reflection, correlation ids,
INVALID_ARGUMENT with google.rpc.BadRequest details, UNIMPLEMENTED naming the missing capability."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from rag_server.api.calls import CORRELATION_HEADER, CORRELATION_PATTERN
from rag_server.api.services import SERVICE_NAMES
from rag_server.config import Settings
from rag_server.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    common_pb2,
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    understanding_pb2,
    understanding_pb2_grpc,
)
from rag_server.server import RunningServer, start_server

pytestmark = pytest.mark.integration

RAG_SERVICES = {
    "rag.v1.UnderstandingService",
    "rag.v1.RetrievalService",
    "rag.v1.AnswerService",
    "rag.v1.IngestionService",
}


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path_factory.mktemp("srv"), load_sample_on_start=False, grace_period_s=5
    )
    server = await start_server(settings)
    yield server
    await server.stop(0)


@pytest.fixture(scope="module")
async def channel(running: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
        yield ch


async def _bad_request(call: Any) -> tuple[grpc.StatusCode, dict[str, str]]:
    """Await a call that must fail; return its code and {field: description} from google.rpc.BadRequest."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        result = await call if not hasattr(call, "__aiter__") else [m async for m in call]
        pytest.fail(f"expected an error, got {result!r}")
    status = await rpc_status.aio.from_call(call)
    assert status is not None, "no google.rpc.Status in the trailers"
    fields: dict[str, str] = {}
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields.update({v.field: v.description for v in bad.field_violations})
    assert status.message == info.value.details()
    return info.value.code(), fields


# --- health and reflection ---------------------------------------------------------------------------


async def test_service_names_are_the_four_rag_services() -> None:
    assert set(SERVICE_NAMES) == RAG_SERVICES


@pytest.mark.parametrize("service", ["", *sorted(RAG_SERVICES)])
async def test_health_serving_per_service(channel: grpc.aio.Channel, service: str) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_health_unknown_service_is_not_found(channel: grpc.aio.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.Check(health_pb2.HealthCheckRequest(service="rag.v1.NoSuchService"), timeout=5)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


async def test_reflection_lists_the_services(channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = [
        r
        async for r in stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        )
    ]
    names = {s.name for s in replies[0].list_services_response.service}
    assert names >= RAG_SERVICES | {"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}


async def test_reflection_describes_a_message(channel: grpc.aio.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(file_containing_symbol="rag.v1.Evidence")
    replies = [r async for r in stub.ServerReflectionInfo(iter([request]))]
    protos = replies[0].file_descriptor_response.file_descriptor_proto
    assert protos, replies[0]
    from google.protobuf import descriptor_pb2

    files = [descriptor_pb2.FileDescriptorProto.FromString(p) for p in protos]
    common = next(f for f in files if f.name == "rag/v1/common.proto")
    evidence = next(m for m in common.message_type if m.name == "Evidence")
    assert {"chunk_id", "drug_id", "section_key", "part_index", "source_refs"} <= {
        f.name for f in evidence.field
    }


# --- correlation id ----------------------------------------------------------------------------------


async def _correlation_id(channel: grpc.aio.Channel, sent: str | None) -> str:
    stub = health_pb2_grpc.HealthStub(channel)
    metadata = None if sent is None else ((CORRELATION_HEADER, sent),)
    call = stub.Check(health_pb2.HealthCheckRequest(service=""), metadata=metadata, timeout=5)
    await call
    got = dict(await call.trailing_metadata()).get(CORRELATION_HEADER)  # echoed with the status
    assert isinstance(got, str)
    assert CORRELATION_HEADER not in dict(await call.initial_metadata())  # a unary reply: no extra write
    return got


async def test_valid_correlation_id_is_echoed(channel: grpc.aio.Channel) -> None:
    for sent in ["req-123", "a.b:c_d-E9", "X" * 128]:
        assert await _correlation_id(channel, sent) == sent


@pytest.mark.parametrize("sent", ["bad id!", "x" * 200, "-leading-dash", "has/slash", ""])
async def test_malformed_correlation_id_is_replaced(channel: grpc.aio.Channel, sent: str) -> None:
    got = await _correlation_id(channel, sent)
    assert got != sent
    assert CORRELATION_PATTERN.fullmatch(got)


async def test_missing_correlation_id_is_generated_fresh_per_call(channel: grpc.aio.Channel) -> None:
    first = await _correlation_id(channel, None)
    second = await _correlation_id(channel, None)
    assert CORRELATION_PATTERN.fullmatch(first) and CORRELATION_PATTERN.fullmatch(second)
    assert first != second


async def test_a_stream_has_the_correlation_id_in_its_headers(channel: grpc.aio.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    call = stub.Watch(
        health_pb2.HealthCheckRequest(service=""), metadata=((CORRELATION_HEADER, "watch-7"),), timeout=5
    )
    first = await call.read()  # the headers come before the first message
    assert first.status == health_pb2.HealthCheckResponse.SERVING
    assert dict(await call.initial_metadata()).get(CORRELATION_HEADER) == "watch-7"
    call.cancel()


async def test_correlation_id_is_echoed_on_errors_too(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    call = stub.Retrieve(
        retrieval_pb2.RetrieveRequest(), metadata=((CORRELATION_HEADER, "err-42"),), timeout=5
    )
    with pytest.raises(grpc.aio.AioRpcError):
        await call
    trailers = dict(await call.trailing_metadata())
    assert trailers.get(CORRELATION_HEADER) == "err-42"
    assert "grpc-status-details-bin" in trailers  # the BadRequest details are still there


# --- INVALID_ARGUMENT with BadRequest details ----------------------------------------------------------


async def test_retrieve_with_nothing_names_query(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    code, fields = await _bad_request(stub.Retrieve(retrieval_pb2.RetrieveRequest(query="   "), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert list(fields) == ["query"]


async def test_retrieve_bad_drug_id_and_section_key(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    request = retrieval_pb2.RetrieveRequest(drug_id="Bad Drug!", section_key="not_a_section")
    code, fields = await _bad_request(stub.Retrieve(request, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(fields) == {"drug_id", "section_key"}
    assert "chong_chi_dinh" in fields["section_key"]  # the known keys are listed


async def test_too_long_query(channel: grpc.aio.Channel) -> None:
    stub = understanding_pb2_grpc.UnderstandingServiceStub(channel)
    code, fields = await _bad_request(stub.Understand(understanding_pb2.UnderstandRequest(query="a" * 2001)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "2000" in fields["query"]


async def test_understand_empty_query_and_bad_conversation_id(channel: grpc.aio.Channel) -> None:
    stub = understanding_pb2_grpc.UnderstandingServiceStub(channel)
    request = understanding_pb2.UnderstandRequest(query="", conversation_id="no spaces allowed")
    code, fields = await _bad_request(stub.Understand(request, timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(fields) == {"query", "conversation_id"}


async def test_lookup_indication_empty(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    code, fields = await _bad_request(
        stub.LookupIndication(retrieval_pb2.LookupIndicationRequest(), timeout=5)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert list(fields) == ["indication"]


async def test_assess_patient_field_paths(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    code, fields = await _bad_request(stub.AssessPatient(retrieval_pb2.AssessPatientRequest(), timeout=5))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert set(fields) == {"drug_ids", "patient"}  # no drug, and no patient fact to assess against
    pregnant = common_pb2.PatientContext(pregnant=True)
    request = retrieval_pb2.AssessPatientRequest(drug_ids=["ok-drug", "NOT OK"], patient=pregnant)
    code, fields = await _bad_request(stub.AssessPatient(request, timeout=5))
    assert (code, list(fields)) == (grpc.StatusCode.INVALID_ARGUMENT, ["drug_ids[1]"])
    request = retrieval_pb2.AssessPatientRequest(
        drug_ids=["ok-drug"], patient=common_pb2.PatientContext(pregnant=True, age_years=200)
    )
    code, fields = await _bad_request(stub.AssessPatient(request, timeout=5))
    assert (code, list(fields)) == (grpc.StatusCode.INVALID_ARGUMENT, ["patient.age_years"])


async def test_streaming_rpcs_validate_too(channel: grpc.aio.Channel) -> None:
    answer = answer_pb2_grpc.AnswerServiceStub(channel)
    code, fields = await _bad_request(answer.Ask(answer_pb2.AskRequest(query=""), timeout=5))
    assert (code, list(fields)) == (grpc.StatusCode.INVALID_ARGUMENT, ["query"])
    ingestion = ingestion_pb2_grpc.IngestionServiceStub(channel)
    code, fields = await _bad_request(ingestion.Ingest(ingestion_pb2.IngestRequest(path=""), timeout=5))
    assert (code, list(fields)) == (grpc.StatusCode.INVALID_ARGUMENT, ["path"])


# --- Ask and UNIMPLEMENTED ---------------------------------------------------------------------------


async def test_ask_without_a_corpus_ends_in_one_final_saying_so(channel: grpc.aio.Channel) -> None:
    stub = answer_pb2_grpc.AnswerServiceStub(channel)
    call = stub.Ask(answer_pb2.AskRequest(query="chống chỉ định của zelvorin"), timeout=30)
    events = [m async for m in call]
    assert [m.WhichOneof("event") for m in events] == ["final"]
    assert events[0].final.decision.reason == common_pb2.DECISION_REASON_CORPUS_NOT_LOADED


async def test_unknown_method_is_unimplemented(channel: grpc.aio.Channel) -> None:
    call = channel.unary_unary("/rag.v1.RetrievalService/NoSuchMethod")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(b"", timeout=5)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_settings_data_dir_created(running: RunningServer) -> None:
    assert Path(running.app.settings.data_dir).is_dir()
