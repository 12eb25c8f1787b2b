"""The channel the command-line tools (`rag-server ask`, `rag-server eval`, `rag-server ingest` handing its
work to a running server) open to a server: plaintext, or TLS when `$RAG_CLIENT_CA` names the CA file to
trust; with `$RAG_API_KEY` set, every call carries `authorization: Bearer <key>` (as the Node client does).
The key is read from the environment, never from an argument (it would show in the process list)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

API_KEY_ENV = "RAG_API_KEY"
CA_ENV = "RAG_CLIENT_CA"


def call_metadata() -> tuple[tuple[str, str], ...]:
    key = os.environ.get(API_KEY_ENV, "").strip()
    return (("authorization", f"Bearer {key}"),) if key else ()


class _Key:
    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self.metadata = metadata

    def _details(self, details: Any) -> Any:
        return details._replace(metadata=tuple(details.metadata or ()) + self.metadata)


# grpc.aio files an interceptor under one kind only: one class per kind of call.
class _UnaryKey(_Key, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        return await continuation(self._details(details), request)


class _StreamKey(_Key, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        return await continuation(self._details(details), request)


class _UploadKey(_Key, grpc.aio.StreamUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_stream_unary(
        self, continuation: Callable[..., Any], details: Any, request_iterator: Any
    ) -> Any:
        return await continuation(self._details(details), request_iterator)


def open_channel(target: str) -> grpc.aio.Channel:
    """An asyncio channel to `target` with the key and TLS of the environment."""
    metadata = call_metadata()
    interceptors: list[Any] | None = (
        [_UnaryKey(metadata), _StreamKey(metadata), _UploadKey(metadata)] if metadata else None
    )
    ca = os.environ.get(CA_ENV, "").strip()
    if ca:
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(ca).read_bytes())
        return grpc.aio.secure_channel(target, credentials, interceptors=interceptors)
    return grpc.aio.insecure_channel(target, interceptors=interceptors)


def open_blocking_channel(target: str, options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
    """A blocking channel to `target` with TLS of the environment (send `call_metadata()` with each call)."""
    ca = os.environ.get(CA_ENV, "").strip()
    if ca:
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(ca).read_bytes())
        return grpc.secure_channel(target, credentials, options=options)
    return grpc.insecure_channel(target, options=options)
