"""safety.toml: the phrases of the safety pre-filter (answer/safety.py)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from rag_server.text.match import Phrases, phrase


@dataclass(frozen=True)
class SafetyVocabulary:
    overdose: Phrases
    allergy: Phrases
    self_harm: Phrases
    harm: Phrases


def _phrases(values: object) -> Phrases:
    assert isinstance(values, list), "safety.toml: phrase lists only"
    return Phrases(dict.fromkeys(phrase(str(v)) for v in values))


@lru_cache(maxsize=4)
def load_safety(path: Path | None = None) -> SafetyVocabulary:
    """The safety phrases from `path`, or the bundled safety.toml."""
    if path is None:
        text = resources.files("rag_server.vocabulary").joinpath("safety.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    data = tomllib.loads(text)
    emergency, harm = data["emergency"], data["harm"]
    return SafetyVocabulary(
        overdose=_phrases(emergency["overdose"]),
        allergy=_phrases(emergency["allergy"]),
        self_harm=_phrases(emergency["self_harm"]),
        harm=_phrases(harm["phrases"]),
    )
