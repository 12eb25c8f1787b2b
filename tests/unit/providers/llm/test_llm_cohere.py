"""The Cohere generator through the real cohere SDK (ClientV2.chat) against a local HTTP server on 127.0.0.1
speaking the v2 chat JSON with native citations (cohere_chat_stub.py). FICTIONAL formulary: not medical
information."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from cohere_chat_stub import CohereChatStub, chat_reply, echo_documents, serve
from fictional_formulary import build_chunks

from rag_server.answer.evidence import title_of
from rag_server.answer.grounding import verify
from rag_server.answer.llm_generate import CohereGenerator
from rag_server.answer.model import Draft, DraftClaim, EvidenceBlock, GenerationRequest, Plan
from rag_server.domain import Reason
from rag_server.providers.base import MalformedOutput, ProviderError
from rag_server.providers.llm import prompts
from rag_server.providers.llm.cohere_chat import CitedSpan, CohereChat, cited_text

CHUNKS = {c.chunk_id: c for c in build_chunks()}
CONTRA = CHUNKS["zentorin__chong_chi_dinh__0"].text  # three sentences
CAUTION = CHUNKS["zentorin__than_trong__0"].text  # two sentences
EVIDENCE = tuple(
    EvidenceBlock(n, CHUNKS[cid], title_of(CHUNKS[cid]))
    for n, cid in ((1, "zentorin__chong_chi_dinh__0"), (2, "longomab__lieu_luong_va_cach_dung__block__t1"),
                   (3, "zentorin__than_trong__0"))
)
REQUEST = GenerationRequest("zentorin: chống chỉ định và thận trọng", Plan.MOST_RELEVANT, EVIDENCE, 5)


@pytest.fixture
def cohere() -> Iterator[tuple[CohereChatStub, CohereGenerator]]:
    stub = CohereChatStub()
    with serve(stub) as url:
        chat = CohereChat("test-key", "command-a-03-2025", url, max_retries=0, timeout_s=5, max_tokens=900)
        yield stub, CohereGenerator(chat)


def test_citations_map_to_the_block_numbers_and_an_uncited_sentence_stays_uncited(
    cohere: tuple[CohereChatStub, CohereGenerator],
) -> None:
    stub, generator = cohere
    first, second = "Suy gan nặng.", "Thận trọng ở người cao tuổi và người bị hen phế quản."
    text = f"{first}\n- {second}\nThuốc này an toàn cho mọi người."

    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        at = text.index(second)
        citations = [(0, 8, ["1"]), (9, 13, ["1"]),  # two citations inside the first sentence: one claim
                     (at, at + 10, ["3"]), (at + 11, at + len(second), ["3", "1"])]
        return 200, chat_reply(text, citations, body["documents"])

    stub.reply = reply
    draft = generator.generate(REQUEST)
    assert draft == Draft(
        (DraftClaim(first, (1,)), DraftClaim(second, (1, 3)),
         DraftClaim("Thuốc này an toàn cho mọi người.", ())),
        evidence_sufficient=True,
    )
    failure = verify(draft, EVIDENCE)  # kept, never dropped: grounding then abstains
    assert failure is not None and (failure.reason, failure.claim_index) == (Reason.UNCITED_CLAIM, 2)

    path, headers, body = stub.requests[0]
    assert path == "/v2/chat" and headers["authorization"] == "Bearer test-key"
    assert body["model"] == "command-a-03-2025" and body["temperature"] == 0.0 and body["max_tokens"] == 900
    assert [d["id"] for d in body["documents"]] == ["1", "3"]  # block 2 needs a visual check: never sent
    assert body["documents"][0]["data"] == {
        "title": "[1] (drug_id=zentorin; thuốc=ZENTORIN (Zentoramid); mục=Chống chỉ định)", "text": CONTRA
    }
    system, user = body["messages"]
    assert system == {"role": "system", "content": prompts.COHERE_SYSTEM}
    assert user["role"] == "user" and "at most 5" in user["content"]
    assert user["content"].endswith(f"<question>\n{REQUEST.question}\n</question>")


def test_an_echo_of_the_documents_is_one_cited_claim_per_sentence(
    cohere: tuple[CohereChatStub, CohereGenerator],
) -> None:
    stub, generator = cohere
    stub.reply = echo_documents
    draft = generator.generate(GenerationRequest("q", Plan.WHOLE_SECTION, EVIDENCE, 8, missing=(3,)))
    assert [c.sources for c in draft.claims] == [(1,), (1,), (1,), (3,), (3,)]
    assert " ".join(c.text for c in draft.claims[:3]) == CONTRA and verify(draft, EVIDENCE) is None
    assert "left out evidence block(s) [3]" in stub.requests[0][2]["messages"][1]["content"]


def test_the_insufficient_reply_is_evidence_insufficient(
    cohere: tuple[CohereChatStub, CohereGenerator],
) -> None:
    stub, generator = cohere
    stub.reply = lambda body: (200, chat_reply(f" {prompts.INSUFFICIENT}. ", [], body["documents"]))
    assert generator.generate(REQUEST) == Draft((), evidence_sufficient=False)


@pytest.mark.parametrize(
    ("status", "payload", "error", "problem"),
    [
        (503, {"message": "overloaded"}, ProviderError, "cohere chat .* failed"),
        (429, {"message": "rate limited"}, ProviderError, "TooManyRequests"),
        (200, {"id": "x", "finish_reason": "MAX_TOKENS",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "Suy gan"}]}},
         MalformedOutput, "max tokens"),
        (200, {"id": "x", "finish_reason": "ERROR", "message": {"role": "assistant", "content": []}},
         ProviderError, "ended with ERROR"),
        (200, {"id": "x", "finish_reason": "COMPLETE", "message": {"role": "assistant", "content": []}},
         MalformedOutput, "no text"),
    ],
)
def test_errors_and_unusable_replies(
    cohere: tuple[CohereChatStub, CohereGenerator], status: int, payload: dict[str, Any],
    error: type[Exception], problem: str,
) -> None:
    stub, generator = cohere
    stub.reply = lambda body: (status, payload)
    with pytest.raises(error, match=problem):
        generator.generate(REQUEST)


@pytest.mark.parametrize(
    ("citation", "problem"),
    [((0, 8, ["9"]), "document '9', never given"), ((0, 99, ["1"]), r"\[0, 99\) is no span")],
)
def test_a_citation_outside_what_was_given_is_malformed(
    cohere: tuple[CohereChatStub, CohereGenerator], citation: tuple[int, int, list[str]], problem: str,
) -> None:
    stub, generator = cohere
    documents = [{"id": "9", "data": {"text": "x"}}, {"id": "1", "data": {"text": CONTRA}}]
    stub.reply = lambda body: (200, chat_reply("Suy gan nặng.", [citation], documents))
    with pytest.raises(MalformedOutput, match=problem):
        generator.generate(REQUEST)


def test_an_unreachable_endpoint_is_a_provider_error() -> None:
    chat = CohereChat("k", "command-a-03-2025", "http://127.0.0.1:9", max_retries=0, timeout_s=2)
    with pytest.raises(ProviderError):
        CohereGenerator(chat).generate(REQUEST)


def test_citation_offsets_count_within_their_content_item() -> None:
    def source(doc_id: str) -> SimpleNamespace:
        return SimpleNamespace(type="document", id=doc_id, document={"id": doc_id})

    message = SimpleNamespace(
        content=[SimpleNamespace(type="thinking", thinking="…"), SimpleNamespace(type="text", text="Ab. "),
                 SimpleNamespace(type="text", text="Cd.")],
        citations=[
            SimpleNamespace(type="TEXT_CONTENT", content_index=1, start=0, end=3, sources=[source("1")]),
            SimpleNamespace(type="TEXT_CONTENT", content_index=2, start=0, end=3,
                            sources=[source("3"), source("3")]),
            SimpleNamespace(type="THINKING_CONTENT", content_index=0, start=0, end=1, sources=[source("8")]),
        ],
    )
    assert cited_text(message, {"1", "3"}).citations == (CitedSpan(0, 3, ("1",)), CitedSpan(4, 7, ("3",)))
