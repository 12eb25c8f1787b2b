"""The security gates of a server, in the order they run, and the start-up line saying how to call it."""

from __future__ import annotations

from rag_server.call_context import Gate
from rag_server.config import Settings
from rag_server.security import exposure
from rag_server.security.auth import AuthGate
from rag_server.security.keys import KeyStore, KeyStoreError
from rag_server.security.limits import RateLimitGate, StreamCapGate
from rag_server.security.tls import bind, credentials, tls_files

__all__ = ["bind", "credentials", "describe_access", "gates_for", "relay_gates", "warn_if_exposed"]


def gates_for(settings: Settings) -> list[Gate]:
    """Auth first (it names the caller), then, on a server bound beyond loopback, the refusal of keyless
    ingestion, then the caller's rate limit, then the Ask stream cap (whose slot is taken last, so a call
    refused earlier never holds one)."""
    keys = KeyStore(settings.data_dir)
    gates: list[Gate] = [AuthGate(keys)]
    if not exposure.is_loopback(settings.host):
        gates.append(exposure.ExposedIngestGate(keys, settings))
    if settings.rate_limit_per_s > 0:
        gates.append(RateLimitGate(settings.rate_limit_per_s, settings.rate_limit_burst))
    if settings.ask_max_streams > 0:
        gates.append(StreamCapGate(settings.ask_max_streams))
    return gates


def relay_gates(settings: Settings) -> list[Gate]:
    """The gates of the owner worker's relay port (`serve --workers`): the worker that received the call ran
    them all; the key is checked again so the call is served as its caller's (names, logs)."""
    return [AuthGate(KeyStore(settings.data_dir))]


def describe_access(settings: Settings, port: int) -> str:
    """One log line: TLS or plaintext, auth on or off, and a grpcurl call that works."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "[::]") else settings.host
    files = tls_files(settings)
    if files is None:
        transport, flags = "plaintext", "-plaintext"
    elif files.client_ca is None:
        transport, flags = "TLS", "-cacert YOUR_CA.pem"
    else:
        transport = "mutual TLS (client certificates signed by RAG_TLS_CLIENT_CA)"
        flags = "-cacert YOUR_CA.pem -cert CLIENT.pem -key CLIENT.key"
    keys = KeyStore(settings.data_dir)
    try:
        records, broken = keys.records(), False
    except (KeyStoreError, OSError):  # the gate refuses every key until the file is fixed (and logs why)
        records, broken = [], True
    if broken or records:
        live = sum(not r.revoked for r in records)
        auth = (f"auth on ({live} live API key(s) in {keys.path}): send every call with "
                f"'authorization: Bearer <key>', e.g. grpcurl {flags} "
                f"-H \"authorization: Bearer $RAG_API_KEY\" -d '{{}}' {host}:{port} "
                "rag.v1.IngestionService/GetCorpus")
    else:
        auth = (f"auth off (no API key in {keys.path}; `rag-server keys add NAME --scopes query "
                f"--data-dir {settings.data_dir}` turns it on without a restart)")
    return f"{transport}; {auth}"


def warn_if_exposed(settings: Settings, port: int) -> bool:
    """A WARNING and a line on stderr when bound beyond loopback with no API key (ingestion refused)."""
    return exposure.warn_if_exposed(settings, KeyStore(settings.data_dir), port)
