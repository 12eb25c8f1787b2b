"""GET /metrics of a registry on host:port, served by a daemon thread (no grpc here: the parent of
`serve --workers` serves its workers' aggregated metrics with it)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature
        pass


class MetricsEndpoint:
    """GET /metrics on host:port in a daemon thread (anything else is 404)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        metrics_app = make_wsgi_app(registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO", "") not in ("/metrics", "/metrics/"):
                start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
                return [b"not found: metrics are at /metrics\n"]
            return metrics_app(environ, start_response)  # type: ignore[no-any-return]

        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        server_class = type("_MetricsServer", (_ThreadingServer,), {"address_family": family})
        self.httpd: WSGIServer = make_server(host, port, app, server_class, handler_class=_QuietHandler)
        self.host = host
        self.port = int(self.httpd.server_port)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="rag-metrics", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
