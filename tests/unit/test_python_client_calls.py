"""The Python client's two faces run one table of call definitions (formulary_rag_client/_calls.py): the
same public methods with the same parameters, each a definition of the table, and the same request sent
for the same call (checked on a fake channel, no server)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from formulary_rag_client import AsyncFormularyClient, FormularyClient
from formulary_rag_client import _calls as calls
from formulary_rag_client.gen.rag.v1 import retrieval_pb2

PLUMBING = {"close"}


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in PLUMBING
    }


def test_both_clients_have_the_same_methods_and_parameters() -> None:
    sync, aio = _methods(FormularyClient), _methods(AsyncFormularyClient)
    assert sync.keys() == aio.keys() and len(sync) == 10
    for name in sync:
        assert list(sync[name].parameters.values()) == list(aio[name].parameters.values()), name


def test_every_method_is_a_call_definition() -> None:
    defined = {name for name, fn in inspect.getmembers(calls, inspect.isfunction)
               if fn.__module__ == calls.__name__ and not name.startswith("_")}
    assert set(_methods(FormularyClient)) == defined


class _Recorder:
    """A multi-callable of a fake channel: records the method path and the request."""

    def __init__(self, path: str, sent: list[tuple[str, Any]], reply: Any) -> None:
        self.path, self.sent, self.reply = path, sent, reply

    def with_call(self, request: Any, **_: Any) -> tuple[Any, Any]:
        self.sent.append((self.path, request))
        return self.reply, self

    def __call__(self, request: Any, **_: Any) -> Any:  # grpc.aio: an awaitable call
        self.sent.append((self.path, request))
        recorder = self

        class _Call:
            def __await__(self) -> Any:
                async def reply() -> Any:
                    return recorder.reply
                return reply().__await__()

            async def trailing_metadata(self) -> Any:
                return (("x-correlation-id", "fake-1"),)

        return _Call()

    def trailing_metadata(self) -> Any:
        return (("x-correlation-id", "fake-1"),)


class _FakeChannel:
    def __init__(self, reply: Any) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.reply = reply

    def unary_unary(self, path: str, *args: Any, **kwargs: Any) -> _Recorder:
        return _Recorder(path, self.sent, self.reply)

    unary_stream = stream_unary = stream_stream = unary_unary

    def close(self) -> None:
        pass


def test_both_clients_send_the_same_request() -> None:
    reply = retrieval_pb2.RetrieveResponse()
    sync_channel, aio_channel = _FakeChannel(reply), _FakeChannel(reply)
    got = FormularyClient("fake", channel=sync_channel).retrieve(drug_id="zentavir", section_key="lieu_dung")
    client = AsyncFormularyClient("fake", channel=aio_channel)  # type: ignore[arg-type]
    got_async = asyncio.run(client.retrieve(drug_id="zentavir", section_key="lieu_dung"))
    assert got is reply and got_async is reply
    assert sync_channel.sent == aio_channel.sent
    (path, request), = sync_channel.sent
    assert path == "/rag.v1.RetrievalService/Retrieve" and request.drug_id == "zentavir"
    assert client.last_correlation_id == "fake-1"
