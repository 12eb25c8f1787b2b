"""Bedrock Runtime without the network, on a real boto3 `bedrock-runtime` client (fake credentials):

* Converse: botocore's Stubber (requests and responses validated against the real service model);
* ConverseStream: Stubber cannot produce its event stream (it validates the `stream` member as one event
  structure and hands it back as a dict, not as the iterable botocore builds), so `StreamingBedrock`
  answers the client's HTTP send (the `before-send` event) with bytes in the AWS event-stream encoding;
  botocore's own parser then turns them into the real `EventStream` (exception events included). The
  request is serialised (and validated) by botocore as for the real service; the stub keeps its JSON body.
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config

REGION = "ap-southeast-1"


def bedrock_client() -> Any:
    """A real client that can never reach AWS (the stubs answer first) nor look for credentials."""
    return boto3.client(
        "bedrock-runtime", region_name=REGION, aws_access_key_id="test", aws_secret_access_key="test",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


def converse_reply(text: str, stop: str = "end_turn") -> dict[str, Any]:
    """A Converse response (the shape the service model defines) whose reply is `text`."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop,
        "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120},
        "metrics": {"latencyMs": 5},
    }


def converse_params(model_id: str, system: str, user: Any, max_tokens: int) -> dict[str, Any]:
    """The expected parameters of one Converse call (`user` may be a matcher of the user text)."""
    return {
        "modelId": model_id,
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": user}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0},
    }


class Contains:
    """Equal to any string containing every one of `parts` (Stubber compares expected params with !=)."""

    def __init__(self, *parts: str, absent: tuple[str, ...] = ()) -> None:
        self.parts = parts
        self.absent = absent

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and all(p in other for p in self.parts) and not any(
            a in other for a in self.absent
        )

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Contains{self.parts!r} absent {self.absent!r}"


# --- the AWS event-stream encoding (prelude, headers, payload, CRC32s) ----------------------------------


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack("!B", len(n)) + n + struct.pack("!BH", 7, len(v)) + v  # 7: a string value


def _message(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(_header(k, v) for k, v in headers.items())
    prelude = struct.pack("!II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    head = prelude + struct.pack("!I", binascii.crc32(prelude))
    body = head + encoded + payload
    return body + struct.pack("!I", binascii.crc32(body))


def event(kind: str, payload: dict[str, Any]) -> bytes:
    headers = {":message-type": "event", ":event-type": kind, ":content-type": "application/json"}
    return _message(headers, json.dumps(payload).encode())


def exception(kind: str, message: str) -> bytes:
    headers = {":message-type": "exception", ":exception-type": kind, ":content-type": "application/json"}
    return _message(headers, json.dumps({"message": message}).encode())


def text_stream(*deltas: str, stop: str = "end_turn") -> bytes:
    """A whole ConverseStream reply: message start, one text delta each, stop, metadata."""
    out = event("messageStart", {"role": "assistant"})
    for delta in deltas:
        out += event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": delta}})
    out += event("contentBlockStop", {"contentBlockIndex": 0})
    out += event("messageStop", {"stopReason": stop})
    return out + event("metadata", {"usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120},
                                    "metrics": {"latencyMs": 5}})


class _Raw:
    """The raw HTTP body botocore reads an event stream from (in small pieces, as a socket would)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.closed = False

    def stream(self, **_: Any) -> Iterator[bytes]:
        for i in range(0, len(self.data), 13):
            yield self.data[i : i + 13]

    def close(self) -> None:
        self.closed = True


@dataclass
class StreamingBedrock:
    """Answers each ConverseStream call of `client` with the next queued event-stream body."""

    client: Any
    replies: list[bytes] = field(default_factory=list)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (url path, JSON body)

    def __post_init__(self) -> None:
        self.client.meta.events.register("before-send.bedrock-runtime.ConverseStream", self._send)

    def _send(self, request: Any, **_: Any) -> AWSResponse:
        self.requests.append((request.url.split(".amazonaws.com", 1)[1], json.loads(request.body)))
        headers = {"content-type": "application/vnd.amazon.eventstream"}
        return AWSResponse(request.url, 200, headers, _Raw(self.replies.pop(0)))
