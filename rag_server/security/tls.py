"""TLS and mutual TLS from PEM files (RAG_TLS_CERT, RAG_TLS_KEY, RAG_TLS_CLIENT_CA).

With a certificate and its key the port serves TLS only (no plaintext port beside it); with a client CA as
well, every client must present a certificate signed by that CA (mutual TLS).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from rag_server.config import Settings
from rag_server.lifecycle import StartupError


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path
    client_ca: Path | None


def tls_files(settings: Settings) -> TlsFiles | None:
    """The configured files, or None for plaintext; a half-configured pair refuses to start."""
    cert, key, client_ca = settings.tls_cert, settings.tls_key, settings.tls_client_ca
    if cert is None and key is None:
        if client_ca is not None:
            raise StartupError("RAG_TLS_CLIENT_CA needs RAG_TLS_CERT and RAG_TLS_KEY (mutual TLS is TLS)")
        return None
    if cert is None or key is None:
        raise StartupError("TLS needs both RAG_TLS_CERT and RAG_TLS_KEY")
    return TlsFiles(cert, key, client_ca)


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StartupError(f"cannot read the {what} {path}: {exc.strerror}") from None
    if b"-----BEGIN " not in data:
        raise StartupError(f"the {what} {path} is not PEM")
    return data


def server_credentials(files: TlsFiles) -> grpc.ServerCredentials:
    chain = _read(files.cert, "TLS certificate (RAG_TLS_CERT)")
    key = _read(files.key, "TLS private key (RAG_TLS_KEY)")
    client_ca = _read(files.client_ca, "client CA (RAG_TLS_CLIENT_CA)") if files.client_ca else None
    return grpc.ssl_server_credentials(
        [(key, chain)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )


def credentials(settings: Settings) -> grpc.ServerCredentials | None:
    """The server's TLS credentials (None: plaintext), read at once so a bad path stops the start before
    anything else begins."""
    files = tls_files(settings)
    return server_credentials(files) if files is not None else None


def bind(server: grpc.aio.Server, settings: Settings, creds: grpc.ServerCredentials | None) -> int:
    """Bind settings.host:settings.port, with TLS when `creds`; the port bound (0: failed)."""
    address = f"{settings.host}:{settings.port}"
    if creds is None:
        return int(server.add_insecure_port(address))
    return int(server.add_secure_port(address, creds))
