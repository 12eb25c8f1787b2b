"""On-disk cache of BM25 document vectors, keyed by (analyzer version, sha256(text)), append-only JSONL.

Word segmentation costs ~0.1 ms per word, minutes for the whole formulary; a re-run of the same PDF (or
of an edited one) reuses the vectors of unchanged chunk texts. The analyzer version folds in k1, b,
avgdl and the underthesea version, so changing any of them misses the cache instead of mixing vectors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ingest.embed_cache import text_sha
from rag_server.store.base import SparseVector
from rag_server.text.bm25 import AVGDL, K1, B, document_vector


def analyzer_version() -> str:
    try:
        segmenter = version("underthesea")
    except PackageNotFoundError:  # pragma: no cover - a declared dependency
        segmenter = "unknown"
    return f"bm25-v1-k{K1}-b{B}-avgdl{AVGDL}-underthesea{segmenter}"


def sparse_vectors_cached(
    texts: Sequence[str], cache_root: Path, progress: Callable[[int, int], None] | None = None
) -> tuple[list[SparseVector], int]:
    """One document vector per text (in order) and how many were computed (not cached)."""
    path = cache_root / analyzer_version() / "document.jsonl"
    known: dict[str, SparseVector] = {}
    if path.exists():
        with path.open("r", encoding="utf-8") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                    known[str(row["sha"])] = SparseVector(
                        [int(i) for i in row["i"]], [float(v) for v in row["v"]]
                    )
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line
    shas = [text_sha(t) for t in texts]
    fresh: dict[str, SparseVector] = {}
    total = len(texts)
    step = max(1, total // 50)
    for n, (sha, text) in enumerate(zip(shas, texts, strict=True), 1):
        if sha not in known and sha not in fresh:
            fresh[sha] = document_vector(text)
        if progress is not None and (n % step == 0 or n == total):
            progress(n, total)
    if fresh:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n")  # harmless blank line; isolates a torn last line of an earlier run
            handle.writelines(
                json.dumps({"sha": sha, "i": vec.indices, "v": vec.values}) + "\n"
                for sha, vec in fresh.items()
            )
            handle.flush()
            os.fsync(handle.fileno())
    return [known.get(sha) or fresh[sha] for sha in shas], len(fresh)
