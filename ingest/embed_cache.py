"""On-disk embedding cache: keyed by (model, kind, sha256(text)), append-only JSONL.

Layout: `<data_dir>/embeddings/<model slug>-<model hash>/<kind>.jsonl`, one line per vector:
`{"model": ..., "kind": ..., "sha": <sha256 hex>, "dims": n, "v": <base64 float32 little-endian>}`.
Each computed batch is appended and fsync'ed before the next one starts, so an interrupted run keeps
everything computed so far and a re-run embeds only the rest. A torn last line (a crash mid-write)
is skipped on read. Vectors round-trip through float32, so a cached vector equals a fresh one bit for bit.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Sequence
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


def embed_cached(
    embedder: Embedder,
    cache_root: Path,
    texts: Sequence[str],
    kind: EmbedKind = "document",
    *,
    batch_size: int = 32,
    resume: bool = True,
    progress: BatchProgress | None = None,
) -> tuple[list[list[float]], EmbedStats]:
    """One vector per text (in order). Distinct texts missing from the cache (all of them when
    `resume` is false) are embedded in batches; each batch is cached before the next starts."""
    cache = EmbeddingCache(cache_root, embedder.model, kind)
    shas = [text_sha(t) for t in texts]
    unique: dict[str, str] = {}
    for sha, text in zip(shas, texts, strict=True):
        unique.setdefault(sha, text)
    found: dict[str, list[float]] = {}
    missing: list[tuple[str, str]] = []
    for sha, text in unique.items():
        hit = cache.get(sha) if resume else None
        if hit is not None and len(hit) == embedder.dims:
            found[sha] = hit
        else:
            missing.append((sha, text))
    stats = EmbedStats(cached=len(found))
    total = len(unique)
    if progress is not None:
        progress(len(found), total)
    for start in range(0, len(missing), batch_size):
        batch = missing[start : start + batch_size]
        vectors = embedder.embed([text for _, text in batch], kind)
        if len(vectors) != len(batch):
            raise RuntimeError(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
        pairs = [(sha, vec) for (sha, _), vec in zip(batch, vectors, strict=True)]
        cache.append(pairs)
        for sha, vec in pairs:
            found[sha] = _float32(vec)
        stats.computed += len(batch)
        if progress is not None:
            progress(len(found), total)
    return [found[sha] for sha in shas], stats
