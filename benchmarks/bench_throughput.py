"""Throughput and tail latency on DISTINCT requests, each workload against a bare grpc.aio server measured
in the same run with the same request bytes and the same reply sizes (prints figures; nothing here is
asserted anywhere: it is never a timed test).

    .venv/bin/python benchmarks/bench_throughput.py                   # rag-server serve --workers 1
    .venv/bin/python benchmarks/bench_throughput.py --workers 2       # --workers 2; the bare server too
    .venv/bin/python benchmarks/bench_throughput.py --requests 400 --ask-seconds 10   # a quick look

Over the FICTIONAL sample formulary (loaded into --data-dir on the first run), with the reply cache as
shipped and then off (RAG_REPLY_CACHE_SIZE=0, a fresh server), each workload over many distinct requests
(benchmarks/distinct_requests.py: the sample's drugs x the section phrasings of sections.toml x
colloquial wrappers, clinical.toml's conditions x wrappers; never one body repeated, except the section
route, which has one body per section of the formulary and cycles through them):
  * section route: Retrieve{drug_id, section_key};
  * section question (typed): Retrieve{query} as users type it ("cho em hỏi liều dùng của zelvorin với");
  * LookupIndication{indication} ("bị tăng huyết áp"), conditions the sample's Chỉ định sections name (by
    their name or a synonym); and, on a line of its own, conditions it does not name (each searched
    densely: one query embedding per request, no target);
  * free-form: Retrieve{query} naming a drug and no section;
  * Ask section question: whole Ask streams.
Each line: QPS, p50 / p99 ms, and the ratio to the bare server's QPS (a trivial handler answering the
workload's median reply size, or for Ask its median stream, message by message) with the same
concurrency from the same client, the two measured in turns (--rounds slices each), so other work on the
machine weighs on both alike. Then, with the cache as shipped, --ask-streams (200) concurrent Ask
streams for --ask-seconds (60), one question in five never seen before: errors, p50 / p99 time to the
first verified block. Client, server and bare server share the machine (their cores are printed).
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import bench_retrieve as br  # noqa: E402
import distinct_requests as dr  # noqa: E402

from rag_server.gen.rag.v1 import answer_pb2, retrieval_pb2  # noqa: E402

TARGETS = {"section route": 0.7, "section question (typed)": 0.4, "LookupIndication": 0.5,
           "free-form": 0.1, "Ask section question": 0.3}
ABSENT = "LookupIndication, not in the formulary"  # every one searched densely (an embedding each)
RETRIEVE = "/rag.v1.RetrievalService/Retrieve"
INDICATION = "/rag.v1.RetrievalService/LookupIndication"
ASK = "/rag.v1.AnswerService/Ask"


@dataclass
class Workload:
    name: str
    method: str
    bodies: list[bytes]  # measured, distinct
    probe: list[bytes]  # others, sent first to learn the reply sizes (and to warm up)
    stream: bool = False
    count: int = 0  # requests to send (cycling through the bodies when there are fewer)


@dataclass
class Figures:
    requests: int
    seconds: float
    latencies_ms: list[float]
    errors: int
    first_errors: list[str] = field(default_factory=list)

    @property
    def qps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def pct(self, p: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] if ordered else 0.0


async def closed_loop(call: Callable[[int], Awaitable[Any]], n: int, concurrency: int) -> Figures:
    counter = itertools.count()
    latencies: list[float] = []
    errors: list[str] = []

    async def worker() -> None:
        while (i := next(counter)) < n:
            began = time.perf_counter()
            try:
                await call(i)
            except grpc.aio.AioRpcError as err:
                errors.append(f"{err.code().name}: {err.details()}"[:160])
            latencies.append((time.perf_counter() - began) * 1000)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Figures(n, time.perf_counter() - began, latencies, len(errors), errors[:3])


async def alternating(bare: Callable[[int], Awaitable[Any]], real: Callable[[int], Awaitable[Any]], n: int,
                      concurrency: int, rounds: int) -> tuple[Figures, Figures]:
    """The bare server and the service in turns, `rounds` slices of n / rounds requests each (the service
    going through its bodies in order, never resending one), so a machine shared with other work weighs
    on both alike."""
    slices = [n // rounds + (1 if r < n % rounds else 0) for r in range(rounds)]
    done = 0
    bare_parts: list[Figures] = []
    real_parts: list[Figures] = []
    for size in slices:
        bare_parts.append(await closed_loop(_from(bare, done), size, concurrency))
        real_parts.append(await closed_loop(_from(real, done), size, concurrency))
        done += size

    def joined(parts: list[Figures]) -> Figures:
        return Figures(sum(p.requests for p in parts), sum(p.seconds for p in parts),
                       [x for p in parts for x in p.latencies_ms], sum(p.errors for p in parts),
                       [e for p in parts for e in p.first_errors][:3])

    return joined(bare_parts), joined(real_parts)


def _from(call: Callable[[int], Awaitable[Any]], offset: int) -> Callable[[int], Awaitable[Any]]:
    def shifted(i: int) -> Awaitable[Any]:
        return call(offset + i)

    return shifted


SEPARATE = [("grpc.use_local_subchannel_pool", 1)]  # a TCP connection per channel


def connections(target: str, n: int) -> list[grpc.aio.Channel]:
    """`n` channels, each its own connection: SO_REUSEPORT spreads connections, not calls, over the
    processes sharing a port, so one connection would measure one worker."""
    return [grpc.aio.insecure_channel(target, options=SEPARATE) for _ in range(max(1, n))]


def unary_caller(channels: Sequence[grpc.aio.Channel], method: str,
                 bodies: Sequence[bytes]) -> Callable[[int], Any]:
    calls = [channel.unary_unary(method) for channel in channels]  # raw bytes both ways, as the bare's

    async def one(i: int) -> Any:
        return await calls[i % len(calls)](bodies[i % len(bodies)], timeout=60)

    return one


def stream_caller(channels: Sequence[grpc.aio.Channel], method: str,
                  bodies: Sequence[bytes]) -> Callable[[int], Any]:
    calls = [channel.unary_stream(method) for channel in channels]

    async def one(i: int) -> int:
        n = 0
        async for _ in calls[i % len(calls)](bodies[i % len(bodies)], timeout=60):
            n += 1
        return n

    return one


async def reply_shape(channel: grpc.aio.Channel, w: Workload) -> list[int]:
    """The median reply size (unary), or the median stream's message sizes (Ask), over the probe bodies."""
    if not w.stream:
        call = channel.unary_unary(w.method)
        sizes = [len(await call(body, timeout=60)) for body in w.probe]
        return [int(statistics.median(sizes))]
    streams: list[list[int]] = []
    call_s = channel.unary_stream(w.method)
    for body in w.probe:
        streams.append([len(m) async for m in call_s(body, timeout=60)])
    length = int(statistics.median(len(s) for s in streams))
    return [int(statistics.median(s[k] for s in streams if len(s) > k)) for k in range(length)]


def bare_method(shape: list[int], stream: bool) -> str:
    return f"/bench.Bare/S{'_'.join(map(str, shape))}" if stream else f"/bench.Bare/U{shape[0]}"


def workloads(drugs: Sequence[Any], indication_texts: list[str], args: argparse.Namespace) -> list[Workload]:
    R, L, A = retrieval_pb2.RetrieveRequest, retrieval_pb2.LookupIndicationRequest, answer_pb2.AskRequest
    names = [d.display_name or d.drug_id for d in drugs]
    n, probe, seed = args.requests, args.probe, args.seed
    pairs = [R(drug_id=d.drug_id, section_key=k).SerializeToString() for d in drugs for k in d.section_keys]
    random.Random(seed).shuffle(pairs)
    typed = dr.take(dr.section_questions(names, seed), n + probe)
    free = dr.take(dr.free_form_questions(names, seed + 1), n // args.free_form_divisor + probe)
    conditions = list(dr.indications(seed + 2, dr.condition_forms(indication_texts, present=True)))
    absent = list(dr.indications(seed + 4, dr.condition_forms(indication_texts, present=False)))
    asks = dr.take(dr.section_questions(names, seed + 3), n // args.ask_divisor + probe)

    def bodies(texts: list[str], make: Callable[[str], Any]) -> list[bytes]:
        return [make(t).SerializeToString() for t in texts]

    return [
        Workload("section route", RETRIEVE, pairs, pairs[:probe], count=n),
        Workload("section question (typed)", RETRIEVE, bodies(typed[probe:], lambda q: R(query=q)),
                 bodies(typed[:probe], lambda q: R(query=q)), count=n),
        Workload("LookupIndication", INDICATION, bodies(conditions[probe:], lambda c: L(indication=c)),
                 bodies(conditions[:probe], lambda c: L(indication=c)), count=n),
        Workload(ABSENT, INDICATION, bodies(absent[probe:], lambda c: L(indication=c)),
                 bodies(absent[:probe], lambda c: L(indication=c)), count=n // args.free_form_divisor),
        Workload("free-form", RETRIEVE, bodies(free[probe:], lambda q: R(query=q)),
                 bodies(free[:probe], lambda q: R(query=q)), count=n // args.free_form_divisor),
        Workload("Ask section question", ASK, bodies(asks[probe:], lambda q: A(query=q)),
                 bodies(asks[:probe], lambda q: A(query=q)), stream=True, count=n // args.ask_divisor),
    ]


async def measure(service: str, bare: str, args: argparse.Namespace, mode: str) -> list[dict[str, Any]]:
    from rag_server.gen.rag.v1 import retrieval_pb2_grpc

    rows: list[dict[str, Any]] = []
    pool, bare_pool = connections(service, args.connections), connections(bare, args.connections)
    async with grpc.aio.insecure_channel(service) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        drugs = (await stub.ListDrugs(retrieval_pb2.ListDrugsRequest(), timeout=60)).drugs
        indication_texts = [e.text for d in drugs for e in (await stub.Retrieve(
            retrieval_pb2.RetrieveRequest(drug_id=d.drug_id, section_key="chi_dinh"), timeout=60)).evidence]
        for w in workloads(drugs, indication_texts, args):
            if args.only and args.only not in w.name:
                continue
            shape = await reply_shape(channel, w)  # also warms this workload's path up
            maker = stream_caller if w.stream else unary_caller
            base, got = await alternating(
                maker(bare_pool, bare_method(shape, w.stream), w.bodies), maker(pool, w.method, w.bodies),
                w.count, args.concurrency, args.rounds)
            ratio = got.qps / base.qps if base.qps else 0.0
            row = {"mode": mode, "workload": w.name, "requests": w.count,
                   "distinct": min(len(w.bodies), w.count), "reply_bytes": shape, "errors": got.errors,
                   "first_errors": got.first_errors, "qps": round(got.qps, 1), "bare_qps": round(base.qps, 1),
                   "ratio": round(ratio, 3), "target": TARGETS.get(w.name), "p50_ms": round(got.pct(50), 2),
                   "p99_ms": round(got.pct(99), 2), "bare_p50_ms": round(base.pct(50), 2)}
            rows.append(row)
            print(f"  {mode:8} {w.name:26} {got.qps:8.0f} QPS  bare {base.qps:7.0f}  ratio {ratio:6.3f} "
                  f"(target {TARGETS.get(w.name)})  p50 {got.pct(50):7.2f}  p99 {got.pct(99):8.2f} ms  "
                  f"errors {got.errors}  distinct {row['distinct']}", flush=True)
    for c in (*pool, *bare_pool):
        await c.close()
    return rows


async def ask_load(service: str, args: argparse.Namespace) -> dict[str, Any]:
    """--ask-streams concurrent Ask streams for --ask-seconds; one question in five never seen before."""
    from rag_server.gen.rag.v1 import retrieval_pb2_grpc

    rng = random.Random(args.seed + 9)
    async with grpc.aio.insecure_channel(service) as channel:
        drugs = (await retrieval_pb2_grpc.RetrievalServiceStub(channel).ListDrugs(
            retrieval_pb2.ListDrugsRequest(), timeout=60)).drugs
        names = [d.display_name or d.drug_id for d in drugs]
        fresh = dr.section_questions(names, args.seed + 5)
        seen = dr.take(fresh, args.seen)
        pool = connections(service, args.connections)
        asks = [c.unary_stream(ASK) for c in pool]

        async def first_block(question: str, k: int = 0) -> tuple[float, bool]:
            began = time.perf_counter()
            first, final = 0.0, False
            body = answer_pb2.AskRequest(query=question).SerializeToString()
            async for raw in asks[k % len(asks)](body, timeout=60):
                event = answer_pb2.AskResponse.FromString(raw)
                kind = event.WhichOneof("event")
                if kind == "block" and not first:
                    first = (time.perf_counter() - began) * 1000
                final = final or kind == "final"
            return first, final

        for batch in range(0, len(seen), 20):  # the questions "seen before": asked once first
            await asyncio.gather(*(first_block(q, k) for k, q in enumerate(seen[batch:batch + 20])))
        ends = time.monotonic() + args.ask_seconds
        ttfb: list[float] = []
        errors: list[str] = []
        counts = {"asks": 0, "new": 0, "no_block": 0, "no_final": 0}

        async def stream_forever(k: int) -> None:
            while time.monotonic() < ends:
                new = rng.random() < 0.2
                question = next(fresh) if new else rng.choice(seen)
                counts["asks"] += 1
                counts["new"] += int(new)
                try:
                    first, final = await first_block(question, k)
                except grpc.aio.AioRpcError as err:
                    errors.append(f"{err.code().name}: {err.details()}"[:160])
                    continue
                if first:
                    ttfb.append(first)
                else:
                    counts["no_block"] += 1
                counts["no_final"] += int(not final)

        began = time.perf_counter()
        await asyncio.gather(*(stream_forever(k) for k in range(args.ask_streams)))
        took = time.perf_counter() - began
        for c in pool:
            await c.close()
    ordered = sorted(ttfb) or [0.0]
    return {"streams": args.ask_streams, "seconds": round(took, 1), **counts, "errors": len(errors),
            "first_errors": errors[:3], "asks_per_s": round(counts["asks"] / took, 1),
            "ttfb_p50_ms": round(ordered[len(ordered) // 2], 1),
            "ttfb_p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1)}


def start_service(data_dir: Path, workers: int, env: dict[str, str]) -> br.Process:
    cmd = [*br._rag_server_cmd(), "serve", "--port", "0", "--data-dir", str(data_dir),
           "--workers", str(workers)]
    return br.start_process(cmd, r"rag-server listening on (\S+:\d+)", env, timeout=600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1,
                        help="rag-server serve --workers, and the bare server's processes (default 1)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per workload (default 2000)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--connections", type=int, default=8,
                        help="connections the clients share (default 8; SO_REUSEPORT spreads connections)")
    parser.add_argument("--rounds", type=int, default=4,
                        help="bare server and service measured in turns, this many slices each (default 4)")
    parser.add_argument("--probe", type=int, default=30, help="requests sent first to learn the reply sizes")
    parser.add_argument("--free-form-divisor", type=int, default=4, help="free-form sends requests / this")
    parser.add_argument("--ask-divisor", type=int, default=4, help="Ask sends requests / this streams")
    parser.add_argument("--ask-streams", type=int, default=200)
    parser.add_argument("--ask-seconds", type=float, default=60.0)
    parser.add_argument("--seen", type=int, default=200, help="Ask load: questions asked before the load")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--modes", default="shipped,off", help="reply cache modes to run (shipped,off)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="default ~/.cache/formulary-rag/bench/throughput-sample (sample loaded once)")
    parser.add_argument("--json", default="", help="also write the figures to this JSON file")
    parser.add_argument("--only", default="", help="measure only the workloads whose name contains this "
                        "(e.g. 'section route'; --ask-seconds 0 skips the Ask load)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="also set this in the service's environment (e.g. RAG_AUDIT=false to see the "
                        "audit chain's share); repeatable")
    args = parser.parse_args(argv)
    data_dir = args.data_dir or Path.home() / ".cache" / "formulary-rag" / "bench" / "throughput-sample"
    data_dir.mkdir(parents=True, exist_ok=True)
    base_env = {"RAG_LOG_LEVEL": "WARNING", "RAG_RATE_LIMIT_PER_S": "0"}
    bare = br.start_process([sys.executable, str(HERE / "bare_server.py"), "--processes", str(args.workers)],
                            r"bare listening on (\S+:\d+)", base_env)
    base_env.update(item.split("=", 1) for item in args.env if "=" in item)
    report: dict[str, Any] = {"benchmark": "throughput", "workers": args.workers, "cores": os.cpu_count(),
                              "concurrency": args.concurrency, "connections": args.connections, "rows": []}
    print(f"serve --workers {args.workers}; bare grpc.aio in {args.workers} process(es); {args.concurrency} "
          f"concurrent clients; {os.cpu_count()} cores shared by client, server and bare server")
    try:
        for mode in args.modes.split(","):
            env = {**base_env, **({"RAG_REPLY_CACHE_SIZE": "0"} if mode == "off" else {})}
            service = start_service(data_dir, args.workers, env)
            try:
                report["rows"] += asyncio.run(measure(service.target, bare.target, args, mode))
                if mode == "shipped" and args.ask_seconds > 0:
                    load = asyncio.run(ask_load(service.target, args))
                    report["ask_load"] = load
                    print(f"  Ask load: {load}", flush=True)
            finally:
                service.stop()
    finally:
        bare.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
