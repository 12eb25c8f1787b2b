"""The ports of `rag-server serve`, bound before anything else starts: a port already in use (by another
program or another rag-server) stops the start with one line, before the store opens or the sample is
ingested, instead of a traceback after all that work.

grpc reports a failed bind without its cause (and logs it from C on stderr), so the gRPC address is first
tried with a plain socket bound the way grpc binds it (SO_REUSEADDR, no SO_REUSEPORT: the server sets
grpc.so_reuseport=0), which names the cause ("address already in use"); the probe is closed before grpc
binds.
"""

from __future__ import annotations

import errno
import os
import socket

from rag_server.lifecycle import StartupError


class ListenError(StartupError):
    """A port of the server cannot be bound; the message is the whole line to print."""


def reason(exc: OSError) -> str:
    """"address already in use" from an OSError (its strerror, lower case, without the errno prefix)."""
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc) or type(exc).__name__


def cannot_listen(host: str, port: int, why: str, what: str = "listen on") -> ListenError:
    return ListenError(f"cannot {what} {host}:{port}: {why}")


def check_can_listen(host: str, port: int) -> None:
    """ListenError when `host:port` cannot be bound now (in use, not an address of this machine, a
    privileged port); port 0 (any free port) always can. An address family the machine lacks (IPv6 for
    `localhost`) is not a failure while another resolved address binds, as for grpc."""
    if port == 0:
        return
    try:
        addresses = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise cannot_listen(host, port, str(exc.strerror or exc).lower()) from None
    failures: list[OSError] = []
    for family, kind, proto, _, address in addresses:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
        except OSError as exc:
            failures.append(exc)
    in_use = [f for f in failures if f.errno in (errno.EADDRINUSE, errno.EACCES)]
    if in_use or (failures and len(failures) == len(addresses)):
        raise cannot_listen(host, port, reason((in_use or failures)[0]))
