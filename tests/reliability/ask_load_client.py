"""Load client for tests/reliability (run as a separate process): N concurrent Ask streams against a
target for a fixed time; prints one JSON line of figures. FICTIONAL sample questions."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import statistics
import sys
import time

import grpc

from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc

QUESTIONS = [
    "chống chỉ định của zelvorin", "liều dùng của novadiamin", "tác dụng phụ của travoxan",
    "thuốc nào điều trị tăng huyết áp", "zelvorin có gây buồn ngủ không", "bảo quản mirvetan thế nào",
    "giá vàng hôm nay", "tương tác thuốc của keptralon",
]


async def main(target: str, streams: int, seconds: float) -> None:
    ends = time.monotonic() + seconds
    counter = itertools.count()
    walls: list[float] = []
    errors: list[str] = []
    kinds: collections.Counter[str] = collections.Counter()
    finals = 0

    async def stream_forever(stub: answer_pb2_grpc.AnswerServiceStub) -> None:
        nonlocal finals
        while time.monotonic() < ends:
            i = next(counter)
            question = QUESTIONS[i % len(QUESTIONS)]
            request = answer_pb2.AskRequest(query=question, conversation_id=f"load-{i % 50}")
            began = time.perf_counter()
            try:
                got_final = False
                async for event in stub.Ask(request, timeout=60):
                    got_final = got_final or event.HasField("final")
                finals += int(got_final)
                if not got_final:
                    errors.append("stream ended without a final message")
                    kinds["NO_FINAL"] += 1
            except grpc.aio.AioRpcError as exc:
                errors.append(f"{exc.code().name}: {exc.details()}")
                kinds[exc.code().name] += 1
            walls.append((time.perf_counter() - began) * 1000)

    async with grpc.aio.insecure_channel(target) as channel:
        stub = answer_pb2_grpc.AnswerServiceStub(channel)
        began = time.perf_counter()
        await asyncio.gather(*(stream_forever(stub) for _ in range(streams)))
        took = time.perf_counter() - began
    ordered = sorted(walls) or [0.0]
    print(json.dumps({
        "streams": streams, "seconds": round(took, 1), "asks": len(walls), "finals": finals,
        "errors": len(errors), "first_errors": errors[:5], "error_kinds": dict(kinds),
        "asks_per_s": round(len(walls) / took, 1),
        "p50_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 1),
    }), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
