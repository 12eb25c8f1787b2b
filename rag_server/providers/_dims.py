"""Known output sizes of hosted embedding models (a model not listed is probed once)."""

from __future__ import annotations

KNOWN_DIMS = {
    "embed-multilingual-v3.0": 1024,
    "embed-english-v3.0": 1024,
    "embed-multilingual-light-v3.0": 384,
    "embed-english-light-v3.0": 384,
    "embed-v4.0": 1536,
    "cohere.embed-multilingual-v3": 1024,
    "cohere.embed-english-v3": 1024,
    "cohere.embed-v4:0": 1536,
}
