"""A JSON-over-HTTP server on 127.0.0.1 standing in for a hosted API (Cohere's embed, chat and rerank), for
an SDK pointed at it with base_url: every POST's path, headers (lower-cased names) and body are recorded,
and `reply(body)` gives the status and the JSON payload to send back."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], tuple[int, Any]]
Recorded = list[tuple[str, dict[str, str], dict[str, Any]]]  # (path, headers, body) of each request


@contextmanager
def serve_json(reply: Reply, requests: Recorded | None = None) -> Iterator[str]:
    """The server on a free port while the block runs; yields its base_url. Requests go into `requests`."""
    recorded = requests if requests is not None else []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorded.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            status, payload = reply(body)
            data = json.dumps(payload, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
