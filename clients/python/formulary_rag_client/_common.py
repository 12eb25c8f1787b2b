"""What the blocking and the asyncio clients share: channel credentials, call metadata, the stubs (the calls
themselves are defined once, in _calls.py)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from formulary_rag_client._calls import STUBS, Stream, Unary

CORRELATION_HEADER = "x-correlation-id"
AUTH_HEADER = "authorization"
UPLOAD_CHUNK_BYTES = 512 * 1024
Metadata = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Connection:
    """How to reach the server: the target, TLS (a CA file to trust instead of the system roots, a client
    certificate and key for mutual TLS, a server name to check instead of the target's host) and the API
    key sent on every call."""

    target: str
    api_key: str | None = None
    tls: bool = False
    ca_file: str | Path | None = None
    client_cert: str | Path | None = None
    client_key: str | Path | None = None
    server_name: str | None = None

    def __post_init__(self) -> None:
        if self.api_key is not None and (not self.api_key or any(c in self.api_key for c in "\r\n")):
            raise ValueError("api_key must be a non-empty single-line string")
        if (self.client_cert is None) != (self.client_key is None):
            raise ValueError("mutual TLS needs both client_cert and client_key")

    @property
    def secure(self) -> bool:
        return self.tls or self.ca_file is not None or self.client_cert is not None

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: str | Path | None) -> bytes | None:
            return Path(path).read_bytes() if path is not None else None

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.ca_file),
            private_key=read(self.client_key),
            certificate_chain=read(self.client_cert),
        )

    def options(self, extra: Sequence[tuple[str, object]] = ()) -> list[tuple[str, object]]:
        options = list(extra)
        if self.server_name:
            options.append(("grpc.ssl_target_name_override", self.server_name))
        return options

    def metadata(self, correlation_id: str | None) -> Metadata:
        """x-correlation-id (yours or a fresh one) first, then the API key when there is one."""
        pairs: list[tuple[str, str]] = [(CORRELATION_HEADER, correlation_id or uuid.uuid4().hex)]
        if self.api_key:
            pairs.append((AUTH_HEADER, f"Bearer {self.api_key}"))
        return tuple(pairs)


def echoed_correlation_id(got: Any, sent: Metadata) -> str:
    """The id the server echoed in `got` (headers or trailers), else the one sent."""
    for item in got or ():
        if item[0] == CORRELATION_HEADER and item[1]:
            return str(item[1])
    return sent[0][1]


class ClientBase:
    """What both clients hold: the connection, the default timeout, one stub per service on the channel,
    and the correlation id the server echoed for the latest call."""

    def __init__(self, target: str, connection: Connection, timeout: float, channel: Any) -> None:
        self.target = target
        self.timeout = timeout
        self._connection = connection
        self._channel = channel
        self._stubs = {name: make(channel) for name, make in STUBS.items()}
        self.last_correlation_id = ""

    def _callable(self, call: Unary[Any] | Stream[Any]) -> Any:
        """The stub's multi-callable of `call` (blocking or grpc.aio, as the channel is)."""
        return getattr(self._stubs[call.stub], call.method)
