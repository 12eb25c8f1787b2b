"""On-disk embedding cache: keyed by (model, kind, sha256(text)), append-only JSONL.

Layout: `<data_dir>/embeddings/<model slug>-<model hash>/<kind>.jsonl`, one line per vector:
`{"model": ..., "kind": ..., "sha": <sha256 hex>, "dims": n, "v": <base64 float32 little-endian>}`.
Each computed batch is appended and fsync'ed as soon as it comes back, so an interrupted run keeps
everything computed so far and a re-run embeds only the rest. A torn last line (a crash mid-write)
is skipped on read. Vectors round-trip through float32, so a cached vector equals a fresh one bit for bit.

`concurrency` batches may be in flight at once (threads): a hosted embedder waits on the network, so
several requests overlap; the offline engine already uses every core in one call, so it gets one. Batches
are appended in the order they finish (the cache is keyed by text, so order does not matter) and the
vectors are returned in the order of the texts. `EmbedStats` times the computing (texts/s of texts
actually embedded, not cache hits).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_server.providers.base import Embedder, EmbedKind
from rag_server.text import slugify

BatchProgress = Callable[[int, int], None]


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _encode(vector: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decode(data: str) -> list[float]:
    return [float(x) for x in np.frombuffer(base64.b64decode(data), dtype="<f4")]


def _float32(vector: Sequence[float]) -> list[float]:
    return [float(x) for x in np.asarray(vector, dtype="<f4")]


class EmbeddingCache:
    """Vectors of one (model, kind): load once, append per batch."""

    def __init__(self, root: Path, model: str, kind: EmbedKind) -> None:
        model_hash = hashlib.blake2b(model.encode("utf-8"), digest_size=4).hexdigest()
        self.model = model
        self.kind = kind
        self.path = root / f"{slugify(model, '_')[:80]}-{model_hash}" / f"{kind}.jsonl"
        self.skipped_lines = 0
        self._vectors: dict[str, list[float]] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("r", encoding="utf-8") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                    if row["model"] != self.model or row["kind"] != self.kind:
                        continue
                    vector = _decode(row["v"])
                    if len(vector) != int(row["dims"]):
                        raise ValueError("dims mismatch")
                except (ValueError, KeyError, TypeError):
                    self.skipped_lines += 1
                    continue
                self._vectors[str(row["sha"])] = vector

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, sha: str) -> list[float] | None:
        return self._vectors.get(sha)

    def append(self, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        """Persist (sha, vector) pairs durably, then make them visible."""
        if not items:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            json.dumps(
                {"model": self.model, "kind": self.kind, "sha": sha, "dims": len(vec), "v": _encode(vec)}
            )
            for sha, vec in items
        ]
        needs_newline = (
            self.path.exists() and self.path.stat().st_size > 0 and not _ends_with_newline(self.path)
        )
        with self.path.open("a", encoding="utf-8") as handle:
            if needs_newline:
                handle.write("\n")
            handle.write("\n".join(lines) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        for sha, vec in items:
            self._vectors[sha] = _float32(vec)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


@dataclass
class EmbedStats:
    computed: int = 0
    cached: int = 0
    seconds: float = 0.0  # wall time spent computing (from the first batch sent to the last one back)
    concurrency: int = 1  # batches that were allowed in flight at once

    @property
    def rate(self) -> float | None:
        """Texts embedded per second (cache hits excluded); None when nothing was embedded."""
        return self.computed / self.seconds if self.computed and self.seconds > 0 else None


Batch = list[tuple[str, str]]  # (sha, text)


def embed_cached(
    embedder: Embedder,
    cache_root: Path,
    texts: Sequence[str],
    kind: EmbedKind = "document",
    *,
    batch_size: int = 32,
    resume: bool = True,
    progress: BatchProgress | None = None,
    concurrency: int = 1,
) -> tuple[list[list[float]], EmbedStats]:
    """One vector per text (in order). Distinct texts missing from the cache (all of them when
    `resume` is false) are embedded in batches, up to `concurrency` at once; each batch is cached as soon
    as it is back. On a failure, the batches already back stay cached and the error is raised."""
    cache = EmbeddingCache(cache_root, embedder.model, kind)
    shas = [text_sha(t) for t in texts]
    unique: dict[str, str] = {}
    for sha, text in zip(shas, texts, strict=True):
        unique.setdefault(sha, text)
    found: dict[str, list[float]] = {}
    missing: Batch = []
    for sha, text in unique.items():
        hit = cache.get(sha) if resume else None
        if hit is not None and len(hit) == embedder.dims:
            found[sha] = hit
        else:
            missing.append((sha, text))
    stats = EmbedStats(cached=len(found), concurrency=max(1, concurrency))
    total = len(unique)
    if progress is not None:
        progress(len(found), total)
    batches = [missing[start : start + batch_size] for start in range(0, len(missing), batch_size)]
    if not batches:
        return [found[sha] for sha in shas], stats

    def keep(batch: Batch, vectors: list[list[float]]) -> None:
        if len(vectors) != len(batch):
            raise RuntimeError(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
        pairs = [(sha, vec) for (sha, _), vec in zip(batch, vectors, strict=True)]
        cache.append(pairs)
        for sha, vec in pairs:
            found[sha] = _float32(vec)
        stats.computed += len(batch)
        stats.seconds = time.perf_counter() - started
        if progress is not None:
            progress(len(found), total)

    started = time.perf_counter()
    if stats.concurrency == 1:
        for batch in batches:
            keep(batch, embedder.embed([text for _, text in batch], kind))
    else:
        _embed_concurrently(embedder, kind, batches, stats.concurrency, keep)
    return [found[sha] for sha in shas], stats


def _embed_concurrently(embedder: Embedder, kind: EmbedKind, batches: list[Batch], concurrency: int,
                        keep: Callable[[Batch, list[list[float]]], None]) -> None:
    """At most `concurrency` batches in flight; each is kept (cached) here, in this thread, when it is back.
    A failure stops sending; the batches in flight are waited for and kept if they succeed."""
    pending = iter(batches)
    in_flight: dict[Future[list[list[float]]], Batch] = {}
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="embed") as pool:

        def send() -> None:
            batch = next(pending, None)
            if batch is not None:
                in_flight[pool.submit(embedder.embed, [text for _, text in batch], kind)] = batch

        for _ in range(concurrency):
            send()
        while in_flight:
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                batch = in_flight.pop(future)
                try:
                    keep(batch, future.result())
                except BaseException as exc:  # re-raised once the batches in flight are back
                    failure = failure or exc
                if failure is None:
                    send()
    if failure is not None:
        raise failure
