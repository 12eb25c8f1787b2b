"""Faults a running server must ride out, each bounded and on 127.0.0.1, printing what it saw:
PostgreSQL taken away mid-run (answers continue, traces resume when it is back), a provider that does not
answer (a clean abstain within the request budget), a reranker that fails (the breaker opens, the order
falls back, the breaker recovers), SIGTERM while Ask streams are open (every accepted stream finishes).
FICTIONAL sample formulary."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from databases import fresh_database  # type: ignore[import-not-found]
from json_http_stub import serve_json  # type: ignore[import-not-found]
from pg_proxy import PgProxy  # type: ignore[import-not-found]

from rag_server.answer.factory import build_answer_parts
from rag_server.answer.model import Draft, GenerationRequest
from rag_server.app import App
from rag_server.config import Settings
from rag_server.domain import Reason
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc, retrieval_pb2, retrieval_pb2_grpc
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.persistence.pool import create_pool
from rag_server.persistence.traces import TraceStore
from rag_server.server import start_server
from rag_server.vocabulary.language import load_language

pytestmark = [pytest.mark.reliability, pytest.mark.integration]


async def _final(stub: answer_pb2_grpc.AnswerServiceStub, query: str, cid: str = "",
                 conversation: str = "") -> answer_pb2.AskFinal:
    metadata = (("x-correlation-id", cid),) if cid else None
    events = [e async for e in stub.Ask(answer_pb2.AskRequest(query=query, conversation_id=conversation),
                                         metadata=metadata, timeout=60)]
    return events[-1].final


@pytest.fixture
async def proxied_database(database_url: str) -> AsyncIterator[tuple[PgProxy, str]]:
    async with fresh_database(database_url, "rag_fault") as name:
        proxy = PgProxy(database_url)
        await proxy.start()
        try:
            yield proxy, proxy.dsn(name)
        finally:
            await proxy.close()


async def test_postgres_taken_away_mid_run(tmp_path: Path, proxied_database: tuple[PgProxy, str]) -> None:
    proxy, dsn = proxied_database
    settings = Settings(port=0, data_dir=tmp_path, database_url=dsn, grace_period_s=5)  # type: ignore[call-arg]
    running = await start_server(settings)
    assert running.app.traces is not None
    outcomes: dict[str, str] = {}
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = answer_pb2_grpc.AnswerServiceStub(channel)
            for phase in ("before", "cut", "after"):
                if phase == "cut":
                    await proxy.cut()
                if phase == "after":
                    await proxy.restore()
                    await asyncio.sleep(0.5)
                began = time.perf_counter()
                final = await _final(stub, "chống chỉ định của zelvorin", f"pg-{phase}", "pg-conv")
                outcomes[phase] = pb.DecisionKind.Name(final.decision.kind)
                print(f"\n{phase}: {outcomes[phase]} in {(time.perf_counter() - began) * 1000:.0f} ms")
                await asyncio.sleep(0.3)  # let the background trace insert run
            if outcomes["after"] == "DECISION_KIND_ANSWERABLE":  # a second call after the restore
                await _final(stub, "liều dùng của zelvorin", "pg-after-2", "pg-conv")
    finally:
        await running.stop(0)
    assert set(outcomes.values()) == {"DECISION_KIND_ANSWERABLE"}, outcomes  # answers never stopped
    await proxy.restore() if proxy._server is None else None
    pool = await create_pool(dsn)
    try:
        store = TraceStore(pool)
        seen = {cid: len(await store.by_correlation_id(cid)) for cid in ("pg-before", "pg-cut", "pg-after-2")}
    finally:
        await pool.close()
    print(f"trace rows: {seen}")
    assert seen["pg-before"] == 1 and seen["pg-cut"] == 0 and seen["pg-after-2"] == 1  # resumed


class SlowGenerator:
    name = "slow"
    blocking = True  # a network provider: runs on the worker pool

    def generate(self, request: GenerationRequest) -> Draft:
        time.sleep(5.0)  # a provider that does not answer in time
        return Draft((), False)


async def test_a_provider_that_does_not_answer_ends_in_a_clean_abstain(tmp_path: Path) -> None:
    settings = Settings(port=0, data_dir=tmp_path, ask_timeout_s=1.0, grace_period_s=1)  # type: ignore[call-arg]
    app = App(settings)
    parts = build_answer_parts(settings, load_language(), None)
    app.answers = dataclasses.replace(parts, generator=SlowGenerator())
    running = await start_server(settings, app)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            began = time.perf_counter()
            final = await _final(answer_pb2_grpc.AnswerServiceStub(channel), "liều dùng của zelvorin")
            took = time.perf_counter() - began
    finally:
        await running.stop(0)
    print(f"\nslow provider: {pb.DecisionReason.Name(final.decision.reason)} after {took:.2f} s")
    assert final.decision.reason == Reason.REQUEST_BUDGET_EXHAUSTED
    assert took < 2.5  # the 1 s budget, not the provider's 5 s


class FlakyRerank:
    """Cohere's rerank endpoint: 503 while `failing`, else the documents in the order given."""

    failing = True

    def reply(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.failing:
            return 503, {"message": "overloaded"}
        top = min(body["top_n"], len(body["documents"]))
        results = [{"index": i, "relevance_score": 1.0 - i / 100} for i in range(top)]
        return 200, {"id": "t", "results": results}


async def test_a_failing_reranker_opens_the_breaker_and_recovers(tmp_path: Path) -> None:
    flaky = FlakyRerank()
    with serve_json(flaky.reply) as cohere_url:
        settings = Settings(  # type: ignore[call-arg]
            port=0, data_dir=tmp_path, reranker="cohere", cohere_api_key="test", grace_period_s=1,
            cohere_base_url=cohere_url, rerank_breaker_failures=2, rerank_breaker_cooldown_s=1.0,
            reply_cache_size=0,
        )
        running = await start_server(settings)
        states: list[str] = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
                stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)

                async def free_form() -> retrieval_pb2.RetrieveResponse:
                    reply = await stub.Retrieve(retrieval_pb2.RetrieveRequest(
                        query="zelvorin chẹn kênh gì ở tế bào cơ trơn"), timeout=30)
                    states.append(reply.reranker_state)
                    return reply

                for _ in range(3):
                    reply = await free_form()
                    assert reply.evidence  # the fallback order still answers
                flaky.failing = False
                await asyncio.sleep(1.2)  # the cooldown
                await free_form()
                await free_form()
        finally:
            await running.stop(0)
    print(f"\nbreaker states: {states}")
    assert states[:3] == ["closed", "open", "open"] and states[-1] == "closed"


def test_sigterm_while_ask_streams_are_open(rag_server_process: Any) -> None:
    server = rag_server_process(env={"RAG_GRACE_PERIOD_S": "20"})
    script = Path(__file__).resolve().parent / "ask_load_client.py"
    client = subprocess.Popen([sys.executable, str(script), server.target, "20", "4"], stdout=subprocess.PIPE,
                              text=True)
    time.sleep(1.5)  # streams accepted and running
    server.proc.send_signal(signal.SIGTERM)
    out, _ = client.communicate(timeout=120)
    code = server.proc.wait(60)
    import json

    figures = json.loads(out.strip().splitlines()[-1])
    print(f"\nSIGTERM under Ask load: {figures}; server exit {code}")
    assert code == 0
    # accepted streams finished; calls after the drain (or the stop) are UNAVAILABLE, nothing else
    assert set(figures["error_kinds"]) <= {"UNAVAILABLE"}, figures
    assert figures["finals"] > 0
