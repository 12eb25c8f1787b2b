"""Bedrock Converse through boto3 (`bedrock-runtime`): `complete` (Converse) and `stream` (ConverseStream,
the text deltas assembled), each one system prompt and one user message, temperature 0.

Errors: botocore's ClientError (throttling, access, validation, a model error, an exception event inside
the stream), BotoCoreError (connect / read timeout, connection, credentials) and a broken stream are
`ProviderError`; a reply that came back unusable (cut at max tokens, filtered by a guardrail or content
filter, no text) is `MalformedOutput`. Retries and timeouts are botocore's (`make_client`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import HTTPError

from rag_server.providers.base import MalformedOutput, ProviderError

log = logging.getLogger(__name__)

_FAILED = (BotoCoreError, ClientError, HTTPError, OSError)  # OSError: a socket timeout mid-stream
_UNUSABLE_STOPS = {
    "max_tokens": "the reply was cut at the max tokens limit",
    "guardrail_intervened": "a guardrail replaced the reply",
    "content_filtered": "a content filter removed the reply",
}


def make_client(region: str, timeout_s: float = 30.0, max_retries: int = 1) -> Any:
    """A `bedrock-runtime` client with bounded timeouts and `max_retries` retries (standard mode)."""
    import boto3

    config = Config(
        connect_timeout=min(timeout_s, 10.0),
        read_timeout=timeout_s,
        retries={"mode": "standard", "total_max_attempts": 1 + max_retries},
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config)


class BedrockConverse:
    def __init__(
        self,
        model_id: str,
        *,
        client: Any = None,
        region: str = "ap-southeast-1",
        max_tokens: int = 2048,
        timeout_s: float = 30.0,
        max_retries: int = 1,
    ) -> None:
        self.model_id = model_id
        self.max_tokens = max_tokens
        self._client = client if client is not None else make_client(region, timeout_s, max_retries)

    def request(self, system: str, prompt: str) -> dict[str, Any]:
        """The keyword arguments of one Converse / ConverseStream call."""
        return {
            "modelId": self.model_id,
            "system": [{"text": system}],
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": 0.0},
        }

    def complete(self, system: str, prompt: str) -> str:
        """The reply's text (Converse)."""
        try:
            reply = self._client.converse(**self.request(system, prompt))
        except _FAILED as exc:
            raise ProviderError(f"bedrock converse ({self.model_id}) failed: {exc}") from exc
        message = reply.get("output", {}).get("message", {})
        text = "".join(block["text"] for block in message.get("content", []) if "text" in block)
        self._log_usage(reply.get("usage"))
        return _usable(text, str(reply.get("stopReason", "")), "converse")

    def stream(self, system: str, prompt: str) -> str:
        """The reply's text, assembled from ConverseStream's text deltas in order."""
        try:
            reply = self._client.converse_stream(**self.request(system, prompt))
            text, stop, usage = assemble(reply["stream"])
        except _FAILED as exc:
            raise ProviderError(f"bedrock converse_stream ({self.model_id}) failed: {exc}") from exc
        self._log_usage(usage)
        return _usable(text, stop, "converse_stream")

    def _log_usage(self, usage: Mapping[str, Any] | None) -> None:
        if usage:
            log.debug("bedrock %s: %s input, %s output tokens", self.model_id, usage.get("inputTokens"),
                      usage.get("outputTokens"))


def assemble(events: Iterable[Mapping[str, Any]]) -> tuple[str, str, Mapping[str, Any] | None]:
    """(text, stopReason, usage) of a ConverseStream event stream: the text deltas in order (reasoning
    and tool-use deltas are not text). The stream is closed at the end, however it ends. An exception
    event raises when botocore parses it (EventStreamError, a ClientError); one that reaches us as a plain
    event (a stream not parsed by botocore) raises ProviderError here."""
    parts: list[str] = []
    stop = ""
    usage: Mapping[str, Any] | None = None
    try:
        for event in events:
            if "contentBlockDelta" in event:
                parts.append(str(event["contentBlockDelta"].get("delta", {}).get("text", "")))
            elif "messageStop" in event:
                stop = str(event["messageStop"].get("stopReason", ""))
            elif "metadata" in event:
                usage = event["metadata"].get("usage")
            else:
                failure = next((k for k in event if k.endswith("Exception")), None)
                if failure is not None:
                    raise ProviderError(f"{failure}: {event[failure].get('message', '')}")
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
    return "".join(parts), stop, usage


def _usable(text: str, stop: str, operation: str) -> str:
    if stop in _UNUSABLE_STOPS:
        raise MalformedOutput(f"bedrock {operation}: {_UNUSABLE_STOPS[stop]}")
    if not text.strip():
        raise MalformedOutput(f"bedrock {operation}: the reply has no text (stop reason {stop or 'none'})")
    return text
