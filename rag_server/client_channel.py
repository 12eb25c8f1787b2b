"""The channel the command-line tools (`rag-server ask`, `rag-server eval`, `rag-server ingest` handing its
work to a running server) open to a server: plaintext, or TLS when a CA file to trust or a client
certificate is given, mutual TLS with a client certificate and its key. Each comes from its flag
(`--tls-ca`, `--tls-cert`, `--tls-key`, added by `add_tls_arguments`) or else from the environment
(`$RAG_CLIENT_TLS_CA` (older name `$RAG_CLIENT_CA`), `$RAG_CLIENT_TLS_CERT`, `$RAG_CLIENT_TLS_KEY`); files
given by flag are read when the command starts (`use_tls_arguments`), so a bad path is one line (exit 2)
before any call.
With `$RAG_API_KEY` set, every call carries `authorization: Bearer <key>` (as the Node client does). The key
is read from the environment, never from an argument (it would show in the process list)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

API_KEY_ENV = "RAG_API_KEY"
CA_ENV = "RAG_CLIENT_TLS_CA"
CERT_ENV = "RAG_CLIENT_TLS_CERT"
KEY_ENV = "RAG_CLIENT_TLS_KEY"
OLD_CA_ENV = "RAG_CLIENT_CA"  # the earlier name of RAG_CLIENT_TLS_CA, still read


class ClientTlsError(Exception):
    """The TLS files of a command-line client are incomplete or unreadable (one line to print)."""


@dataclass(frozen=True)
class ClientTls:
    ca: Path | None = None  # the CA to trust for the server's certificate (None: the system roots)
    cert: Path | None = None  # a client certificate chain (mutual TLS), with its key
    key: Path | None = None

    @property
    def enabled(self) -> bool:
        return self.ca is not None or self.cert is not None or self.key is not None


def _env_path(*names: str) -> Path | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return Path(value)
    return None


def tls_from_environment() -> ClientTls:
    return ClientTls(_env_path(CA_ENV, OLD_CA_ENV), _env_path(CERT_ENV), _env_path(KEY_ENV))


_chosen: list[ClientTls] = []  # set by use_tls_arguments: the flags, falling back to the environment


def client_tls() -> ClientTls:
    """The TLS files of this command: its flags (when it had any), else the environment."""
    return _chosen[-1] if _chosen else tls_from_environment()


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """--tls-ca, --tls-cert, --tls-key on a command that calls a server."""
    group = parser.add_argument_group("TLS to the server (any of these turns TLS on)")
    group.add_argument("--tls-ca", type=Path, default=None, metavar="PEM",
                       help=f"CA certificate to trust for the server (default ${CA_ENV}; none: system roots)")
    group.add_argument("--tls-cert", type=Path, default=None, metavar="PEM",
                       help=f"client certificate for mutual TLS, with --tls-key (default ${CERT_ENV})")
    group.add_argument("--tls-key", type=Path, default=None, metavar="PEM",
                       help=f"private key of --tls-cert (default ${KEY_ENV})")


def use_tls_arguments(args: argparse.Namespace) -> None:
    """Take this command's --tls-* flags (each one falling back to its environment variable); when a flag
    was given, read the files now (ClientTlsError when they are incomplete or unreadable). Files named only
    by the environment are read when a channel opens (a local `rag-server ingest` opens none)."""
    flags = ClientTls(getattr(args, "tls_ca", None), getattr(args, "tls_cert", None),
                      getattr(args, "tls_key", None))
    env = tls_from_environment()
    tls = ClientTls(flags.ca or env.ca, flags.cert or env.cert, flags.key or env.key)
    if flags.enabled:
        channel_credentials(tls)
    _chosen[:] = [tls]


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ClientTlsError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    if b"-----BEGIN " not in data:
        raise ClientTlsError(f"the {what} {path} is not PEM")
    return data


def channel_credentials(tls: ClientTls | None = None) -> grpc.ChannelCredentials | None:
    """TLS credentials of `tls` (default: this command's), None for plaintext."""
    tls = client_tls() if tls is None else tls
    if not tls.enabled:
        return None
    if (tls.cert is None) != (tls.key is None):
        raise ClientTlsError(
            f"a client certificate needs its key: give both --tls-cert and --tls-key "
            f"(${CERT_ENV}, ${KEY_ENV})"
        )
    return grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca, "CA certificate (--tls-ca)") if tls.ca else None,
        private_key=_read(tls.key, "client key (--tls-key)") if tls.key else None,
        certificate_chain=_read(tls.cert, "client certificate (--tls-cert)") if tls.cert else None,
    )


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
    """An asyncio channel to `target` with the key of the environment and this command's TLS."""
    metadata = call_metadata()
    interceptors: list[Any] | None = (
        [_UnaryKey(metadata), _StreamKey(metadata), _UploadKey(metadata)] if metadata else None
    )
    credentials = channel_credentials()
    if credentials is not None:
        return grpc.aio.secure_channel(target, credentials, interceptors=interceptors)
    return grpc.aio.insecure_channel(target, interceptors=interceptors)


def open_blocking_channel(target: str, options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
    """A blocking channel to `target` with this command's TLS (send `call_metadata()` with each call)."""
    credentials = channel_credentials()
    if credentials is not None:
        return grpc.secure_channel(target, credentials, options=options)
    return grpc.insecure_channel(target, options=options)
