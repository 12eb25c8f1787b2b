"""A bare grpc.aio server for bench_throughput.py: a trivial handler answering with the message sizes a
workload's real replies have, in one or several processes sharing a port (SO_REUSEPORT, as
`rag-server serve --workers`; each process spawned before any grpc object exists in the parent).

    python benchmarks/bare_server.py [--processes N]     # prints "bare listening on 127.0.0.1:PORT"

Methods are named by the reply they give, raw bytes in and out (no proto work):
    /bench.Bare/U<size>             unary: <size> bytes
    /bench.Bare/S<size>_<size>_...  server stream: one message of each size, in order
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc

PREFIX = "/bench.Bare/"


def _handler(method: str) -> grpc.RpcMethodHandler | None:
    name = method.removeprefix(PREFIX)
    if name.startswith("U") and name[1:].isdigit():
        body = b"x" * int(name[1:])

        async def unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return body

        return grpc.unary_unary_rpc_method_handler(unary)
    if name.startswith("S"):
        bodies = [b"x" * int(size) for size in name[1:].split("_") if size.isdigit()]

        async def stream(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[bytes]:
            for body in bodies:
                yield body

        return grpc.unary_stream_rpc_method_handler(stream)
    return None


class _Generic(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self) -> None:
        self.made: dict[str, grpc.RpcMethodHandler | None] = {}

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = details.method
        if method not in self.made:
            self.made[method] = _handler(method)
        return self.made[method]


async def _serve(port: int, ready: Any) -> None:
    server = grpc.aio.server(options=[("grpc.so_reuseport", 1)])
    server.add_generic_rpc_handlers((_Generic(),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    ready.put(True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0)


def _process(port: int, ready: Any) -> None:
    asyncio.run(_serve(port, ready))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args(argv)
    reservation = socket.socket()
    reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    reservation.bind(("127.0.0.1", 0))
    port = reservation.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    procs = [context.Process(target=_process, args=(port, ready)) for _ in range(max(1, args.processes))]
    for proc in procs:
        proc.start()
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    for _ in procs:
        ready.get(timeout=60)
    print(f"bare listening on 127.0.0.1:{port} ({len(procs)} process(es))", flush=True)
    while not stopping and all(p.is_alive() for p in procs):
        time.sleep(0.2)
    for proc in procs:
        if proc.pid is not None and proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(10)
    reservation.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
