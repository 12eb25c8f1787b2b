"""Cohere Chat (API v2) with documents through the cohere SDK's ClientV2 (`base_url` points it elsewhere,
e.g. at a local test server): one system and one user message, the documents each with the id the
caller chose, temperature 0. The reply is its text and Cohere's native citations (spans of the text, each
with the ids of the documents it cites).

Errors: anything the SDK raises (ApiError for an HTTP error status, httpx timeouts and connection errors)
and a reply that ended in ERROR or TIMEOUT is `ProviderError`; a reply cut at MAX_TOKENS, with no text, or
with a citation that is no span of its text or cites a document it was not given, is `MalformedOutput`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_server.providers.base import MalformedOutput, ProviderError
from rag_server.providers.cohere.client import cohere_client

_TEXT_CITATIONS = (None, "TEXT_CONTENT")  # PLAN and THINKING_CONTENT citations cite no answer text


@dataclass(frozen=True)
class CitedSpan:
    """[start, end) of the reply's text, citing these document ids."""

    start: int
    end: int
    document_ids: tuple[str, ...]


@dataclass(frozen=True)
class CitedText:
    text: str
    citations: tuple[CitedSpan, ...]


class CohereChat:
    def __init__(
        self,
        api_key: str,
        model: str,
        base_url: str = "",
        *,
        timeout_s: float = 30.0,
        max_retries: int = 1,
        max_tokens: int = 2048,
        client: Any = None,
    ) -> None:
        if client is None:
            client = cohere_client(api_key, base_url, timeout_s, max_retries)
        self._client = client
        self.model = model
        self.max_tokens = max_tokens

    def chat(self, system: str, prompt: str, documents: Sequence[tuple[str, Mapping[str, str]]]) -> CitedText:
        """`documents` are (id, data) pairs; the citations name those ids."""
        try:
            reply = self._client.chat(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                documents=[{"id": doc_id, "data": dict(data)} for doc_id, data in documents],
                temperature=0.0,
                max_tokens=self.max_tokens,
            )
        except Exception as exc:  # the SDK raises ApiError, httpx errors, its own validation errors
            raise ProviderError(f"cohere chat ({self.model}) failed: {type(exc).__name__}: {exc}") from exc
        finish = str(getattr(reply, "finish_reason", "") or "")
        if finish in ("ERROR", "TIMEOUT"):
            raise ProviderError(f"cohere chat ({self.model}) ended with {finish}")
        if finish == "MAX_TOKENS":
            raise MalformedOutput(f"cohere chat ({self.model}): the reply was cut at the max tokens limit")
        return cited_text(getattr(reply, "message", None), {doc_id for doc_id, _ in documents})


def cited_text(message: Any, given: set[str]) -> CitedText:
    """The text items of a reply message joined in order, and its text citations as spans of that text
    (a citation's `content_index` names the content item its start/end count in)."""
    offsets: dict[int, tuple[int, int]] = {}  # content index -> (offset in the joined text, length)
    parts: list[str] = []
    position = 0
    for index, item in enumerate(getattr(message, "content", None) or []):
        text = getattr(item, "text", None)
        if getattr(item, "type", "text") == "text" and isinstance(text, str):
            offsets[index] = (position, len(text))
            parts.append(text)
            position += len(text)
    joined = "".join(parts)
    if not joined.strip():
        raise MalformedOutput("cohere chat: the reply has no text")
    spans: list[CitedSpan] = []
    for citation in getattr(message, "citations", None) or []:
        if getattr(citation, "type", None) not in _TEXT_CITATIONS:
            continue
        base, length = offsets.get(getattr(citation, "content_index", None) or 0, (0, -1))
        start, end = getattr(citation, "start", None), getattr(citation, "end", None)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= length):
            raise MalformedOutput(f"cohere chat: a citation [{start}, {end}) is no span of the reply's text")
        sources = getattr(citation, "sources", None) or []
        ids = tuple(dict.fromkeys(_document_id(source) for source in sources))
        unknown = [i for i in ids if i not in given]
        if unknown:
            raise MalformedOutput(f"cohere chat: a citation names document {unknown[0]!r}, never given")
        spans.append(CitedSpan(base + start, base + end, ids))
    return CitedText(joined, tuple(spans))


def _document_id(source: Any) -> str:
    """The id of a cited document (the source's own id; the id inside its document as a fallback)."""
    doc_id = getattr(source, "id", None)
    if not doc_id:
        document = getattr(source, "document", None) or {}
        doc_id = document.get("id") if isinstance(document, dict) else None
    return str(doc_id or "")
