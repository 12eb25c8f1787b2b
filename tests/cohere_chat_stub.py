"""A local stand-in for Cohere's Chat API v2 (POST /v2/chat) on 127.0.0.1, for the cohere SDK pointed at it
with base_url. By default it answers with the documents it was given, one line per sentence, each line
cited to its document (spans of the reply text, as Cohere's native citations). FICTIONAL texts only."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from json_http_stub import serve_json

Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def chat_reply(text: str, citations: list[tuple[int, int, list[str]]], documents: list[dict[str, Any]],
               finish_reason: str = "COMPLETE") -> dict[str, Any]:
    """A v2 chat response body: `text`, and each citation (start, end, cited document ids)."""
    by_id = {d["id"]: d for d in documents}
    return {
        "id": "stub-reply",
        "finish_reason": finish_reason,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "citations": [
                {
                    "start": start, "end": end, "text": text[start:end], "type": "TEXT_CONTENT",
                    "sources": [{"type": "document", "id": i, "document": {"id": i, **by_id[i]["data"]}}
                                for i in ids],
                }
                for start, end, ids in citations
            ],
        },
        "usage": {"billed_units": {"input_tokens": 10, "output_tokens": 5},
                  "tokens": {"input_tokens": 10, "output_tokens": 5}},
    }


def echo_documents(body: dict[str, Any], uncited: str = "") -> tuple[int, dict[str, Any]]:
    """Every sentence of every document, one per line, each cited to its document; then `uncited` (a
    sentence no citation covers) when given."""
    lines: list[tuple[str, str]] = []
    for doc in body["documents"]:
        for sentence in re.split(r"(?<=\.)\s+", doc["data"]["text"].strip()):
            lines.append((sentence, doc["id"]))
    text, citations = "", []
    for sentence, doc_id in lines:
        citations.append((len(text), len(text) + len(sentence), [doc_id]))
        text += sentence + "\n"
    text += uncited
    return 200, chat_reply(text.rstrip("\n"), citations, body["documents"])


@dataclass
class CohereChatStub:
    reply: Reply = echo_documents
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)


@contextmanager
def serve(stub: CohereChatStub) -> Iterator[str]:
    """The stub on 127.0.0.1 (a free port); yields its base_url."""
    with serve_json(lambda body: stub.reply(body), stub.requests) as url:
        yield url
