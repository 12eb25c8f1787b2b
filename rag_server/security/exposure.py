"""Safe defaults for a server reachable beyond this machine.

A server bound to anything but loopback (127.0.0.0/8, ::1, localhost) while no API key exists would let
anyone who reaches the port replace the served corpus. So, as long as `<data-dir>/keys.json` holds no key,
such a server refuses IngestionService/Ingest and UploadDocument with PERMISSION_DENIED (ErrorInfo
INGEST_NEEDS_API_KEY) saying how to add a key, and says so at start (a WARNING log line and a line on
stderr). The first key added lifts the refusal at the next call (the auth gate then asks for the ingest
scope), no restart. On loopback nothing changes: the demo ingests without a key.
"""

from __future__ import annotations

import ipaddress
import logging
import sys
from typing import Any

import grpc

from rag_server.config import Settings
from rag_server.request_errors import permission_denied
from rag_server.security.keys import KeyStore

log = logging.getLogger("rag_server.security")

INGEST_NEEDS_API_KEY = "INGEST_NEEDS_API_KEY"
INGEST_METHODS = frozenset({"/rag.v1.IngestionService/Ingest", "/rag.v1.IngestionService/UploadDocument"})


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (also as [::1] or ::ffff:127.x.y.z) and localhost; anything else, a wildcard or
    another name included, may be reachable from elsewhere."""
    text = host.strip().strip("[]").lower()
    if text == "localhost" or text.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # fe80::1%eth0: the zone is not the address
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def how_to_add_key(data_dir: str = "DATA_DIR") -> str:
    return (f"add a key with `rag-server keys add NAME --scopes ingest --data-dir {data_dir}` and send it as "
            "'authorization: Bearer <key>' (create keys before exposing the port)")


def exposed_warning(settings: Settings, port: int) -> str:
    return (f"rag-server: listening on {settings.host}:{port} with no API key: ingestion is refused; anyone "
            f"who reaches this port can query ({how_to_add_key(str(settings.data_dir))})")


class ExposedIngestGate:
    """Refuses ingestion on a non-loopback server while no API key exists (auth off). With a key, the
    auth gate before this one decides (scope `ingest`); this gate then does nothing."""

    def __init__(self, store: KeyStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    def admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        if method not in INGEST_METHODS or self.store.current().enabled:
            return None
        raise permission_denied(
            f"this server listens on {self.settings.host}, beyond loopback, with no API key: {method} is "
            f"refused so that nobody who reaches the port can replace the corpus; {how_to_add_key()}",
            INGEST_NEEDS_API_KEY, {"method": method, "scope": "ingest", "host": self.settings.host},
        )


def warn_if_exposed(settings: Settings, store: KeyStore, port: int) -> bool:
    """At start: a WARNING log line and a line on stderr when the server is exposed without a key."""
    if is_loopback(settings.host) or store.current().enabled:
        return False
    line = exposed_warning(settings, port)
    log.warning("%s", line)
    print(line, file=sys.stderr, flush=True)
    return True
