"""AnswerService/Ask benchmark over gRPC (prints figures; nothing here is asserted anywhere).

    .venv/bin/python benchmarks/bench_ask.py                    # the ~15k-chunk scale corpus (cached)
    .venv/bin/python benchmarks/bench_ask.py --monographs 40    # quick

Uses the FICTIONAL scale corpus of bench_retrieve.py (built once, cached), starts the real server and a
bare grpc.aio echo service as separate processes on 127.0.0.1, and measures with N concurrent clients:
Ask throughput (whole streams) and the time to the first verified block, for section questions,
free-form questions and indication lookups, against the echo baseline of the same run; then, one request
at a time, each workload's stage timings as the final message reports them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_retrieve as br

INDICATION_QUESTIONS = ("thuốc nào điều trị {indication}", "{indication} dùng thuốc gì")


async def _stream(stub: Any, request: Any, timeout: float) -> tuple[float, float, Any]:
    """(whole stream ms, first block ms or 0, final message)."""
    began = time.perf_counter()
    first = 0.0
    final = None
    async for event in stub.Ask(request, timeout=timeout):
        kind = event.WhichOneof("event")
        if kind == "block" and not first:
            first = (time.perf_counter() - began) * 1000
        elif kind == "final":
            final = event.final
    return (time.perf_counter() - began) * 1000, first, final


REPORT: dict[str, Any] = {"benchmark": "ask", "workloads": [], "single": {}}


async def load(stub: Any, requests: Sequence[Any], n: int, concurrency: int) -> dict[str, Any]:
    counter = itertools.count()
    walls: list[float] = []
    firsts: list[float] = []
    errors = 0

    async def worker() -> None:
        nonlocal errors
        while (i := next(counter)) < n:
            try:
                wall, first, _ = await _stream(stub, requests[i % len(requests)], 60)
            except grpc.aio.AioRpcError:
                errors += 1
                continue
            walls.append(wall)
            if first:
                firsts.append(first)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - began
    return {"qps": n / seconds, "p50": statistics.median(walls) if walls else 0.0,
            "first_block_p50": statistics.median(firsts) if firsts else 0.0, "errors": errors, "n": n,
            "latencies_ms": [round(w, 3) for w in walls]}


async def run(service: str, echo: str, args: argparse.Namespace) -> None:
    from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc, retrieval_pb2, retrieval_pb2_grpc

    rng = random.Random(args.seed)
    async with grpc.aio.insecure_channel(service) as channel, grpc.aio.insecure_channel(echo) as echo_ch:
        stub = answer_pb2_grpc.AnswerServiceStub(channel)
        drugs = (await retrieval_pb2_grpc.RetrievalServiceStub(channel).ListDrugs(
            retrieval_pb2.ListDrugsRequest(), timeout=60)).drugs
        names = [d.display_name or d.drug_id for d in drugs]

        def asks(templates: Sequence[str], fill: str) -> list[Any]:
            values = names if fill == "name" else list(br.INDICATIONS)
            return [answer_pb2.AskRequest(query=rng.choice(templates).format(**{fill: rng.choice(values)}))
                    for _ in range(512)]

        workloads = {
            "Ask section question": asks(br.SECTION_QUESTIONS, "name"),
            "Ask free-form": asks(br.FREE_FORM_QUESTIONS, "name"),
            "Ask indication": asks(INDICATION_QUESTIONS, "indication"),
        }
        echo_call = echo_ch.unary_unary(br.ECHO_METHOD)
        payloads = [r.SerializeToString() for r in workloads["Ask section question"]]

        async def echo_one(i: int) -> Any:
            return await echo_call(payloads[i % len(payloads)], timeout=30)

        for reqs in workloads.values():  # warm-up, unmeasured
            for req in reqs[:10]:
                await _stream(stub, req, 120)
        echo = await br.measure("echo", echo_one, args.requests, args.concurrency, args.warmup)
        print(f"\n{args.concurrency} concurrent clients; echo (grpc.aio, raw bytes): {echo.qps:.0f} QPS, "
              f"p50 {echo.pct(50):.2f} ms")
        print(f"{'workload':24} {'QPS':>7} {'/ echo':>7} {'p50 ms':>8} {'1st block p50':>14} {'errors':>6}")
        for name, reqs in workloads.items():
            got = await load(stub, reqs, args.requests // args.divisor, args.concurrency)
            print(f"{name:24} {got['qps']:7.0f} {got['qps'] / echo.qps:7.3f} {got['p50']:8.2f} "
                  f"{got['first_block_p50']:14.2f} {got['errors']:6d}")
            REPORT["workloads"].append({
                "name": name, "requests": got["n"], "errors": got["errors"], "qps": round(got["qps"], 1),
                "ratio_to_echo": round(got["qps"] / echo.qps, 4), "p50_ms": round(got["p50"], 3),
                "first_block_p50_ms": round(got["first_block_p50"], 3), "latencies_ms": got["latencies_ms"],
            })
        REPORT["echo"] = {"qps": round(echo.qps, 1), "p50_ms": round(echo.pct(50), 3),
                          "latencies_ms": [round(x, 3) for x in echo.latencies_ms]}
        REPORT["concurrency"] = args.concurrency
        print(f"\nOne request at a time ({args.single} fresh questions each): p50 of the whole stream, "
              "of the first verified block, and the stages the final message reports (ms)")
        fresh = random.Random(args.seed + 1)
        for name, reqs in workloads.items():
            sample = fresh.sample(reqs, min(args.single, len(reqs)))
            walls, firsts, stages = [], [], {}
            for req in sample:
                wall, first, final = await _stream(stub, req, 60)
                walls.append(wall)
                if first:
                    firsts.append(first)
                for t in final.timings:
                    stages.setdefault(t.stage, []).append(t.millis)
            parts = ", ".join(f"{s} {statistics.median(v):.2f}" for s, v in stages.items())
            first_p50 = statistics.median(firsts) if firsts else 0.0
            print(f"{name:24} p50 {statistics.median(walls):7.2f}  first block {first_p50:7.2f}  [{parts}]")
            REPORT["single"][name] = {
                "p50_ms": round(statistics.median(walls), 3), "first_block_p50_ms": round(first_p50, 3),
                "stages_ms": {s: round(statistics.median(v), 3) for s, v in stages.items()},
            }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--monographs", type=int, default=680)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--requests", type=int, default=1000, help="echo requests (Ask: requests / divisor)")
    parser.add_argument("--divisor", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--single", type=int, default=30)
    parser.add_argument("--embed-max-words", type=int, default=32)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--json", default="", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    os.environ["RAG_EMBED_MAX_WORDS"] = str(args.embed_max_words)
    cache = Path.home() / ".cache" / "formulary-rag" / "bench"
    data_dir = args.data_dir or cache / f"scale-{args.monographs}"
    data_dir.mkdir(parents=True, exist_ok=True)
    corpus = br.ensure_corpus(data_dir, args.monographs, args.seed, False)
    print(f"corpus: {corpus['chunks']} chunks, {corpus['monographs']} monographs")
    env = {"RAG_LOAD_SAMPLE_ON_START": "false", "RAG_LOG_LEVEL": "WARNING"}
    server = br.start_process([*br._rag_server_cmd(), "serve", "--port", "0", "--data-dir", str(data_dir)],
                              r"rag-server listening on (\S+:\d+)", env)
    echo = br.start_process([sys.executable, str(Path(br.__file__).resolve()), "--echo-server"],
                            r"echo listening on (\S+:\d+)", env)
    try:
        asyncio.run(run(server.target, echo.target, args))
    finally:
        server.stop()
        echo.stop()
    print(f"machine: {os.cpu_count()} cores; server and echo each in their own process; client in this one")
    if args.json:
        REPORT["corpus"] = {"chunks": corpus["chunks"], "monographs": corpus["monographs"]}
        REPORT["cores"] = os.cpu_count()
        Path(args.json).write_text(json.dumps(REPORT, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
