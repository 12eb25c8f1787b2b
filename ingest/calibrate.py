"""Calibrate the dense floor of the indication fallback for THIS corpus and THIS embedder, at ingest.

Dense search always returns nearest neighbours, even for a made-up condition, and where real matches and
nonsense separate depends on the embedder (e5-small cosines sit between 0.83 and 0.92). So no global
number is right: at ingest, the made-up conditions of clinical.toml [calibration] are embedded like a
lookup ("điều trị {x}") and compared with every prose chunk of the new corpus's indication section
(sections.toml [roles] indication); the floor is the
best score any of them reached plus `margin`. It is recorded in the manifest; a corpus without one (an
older manifest) gets no dense fallback at all. Cost: one embedding call of a few dozen short texts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_server.domain import Chunk, ChunkKind
from rag_server.providers.base import Embedder
from rag_server.vocabulary.clinical import Calibration
from rag_server.vocabulary.sections import load_vocabulary


def indication_dense_floor(
    chunks: Sequence[Chunk],
    dense: Sequence[Sequence[float]],
    embedder: Embedder,
    calibration: Calibration,
    indication_section: str | None = None,
) -> float:
    """max over the probes of their best cosine with an indication prose chunk, plus the margin (0.0 when
    the corpus has no indication chunk or no probe is configured: the dense fallback then stays off).
    `indication_section`: the section key of the indication role, by default the bundled vocabulary's."""
    section = indication_section or load_vocabulary().roles.indication
    targets = [
        vector for chunk, vector in zip(chunks, dense, strict=True)
        if chunk.section_key == section and chunk.chunk_kind is ChunkKind.PROSE
    ]
    if not targets or not calibration.probes:
        return 0.0
    queries = embedder.embed([calibration.template.format(p) for p in calibration.probes], "query")
    best = max(_dot(q, t) for q in queries for t in targets)
    return round(min(1.0, best + calibration.margin), 6)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=False))
