"""strings.toml: the service's own user-facing words (reason messages, disclaimer, facet titles, notices,
decision details, and what ingestion writes into chunks)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Strings:
    disclaimer: str
    reasons: dict[str, str]  # DecisionReason name (without prefix) -> message
    facets: dict[str, str]  # Facet value -> title
    groups: dict[str, str]  # Group value -> how a notice names it
    notices: dict[str, str]  # notice name -> template
    chunk: dict[str, str]  # what ingestion writes into a chunk: name -> template
    details: dict[str, str]  # what a decision adds to its reason's message: name -> text

    def notice(self, name: str, **values: object) -> str:
        """The notice `name` with its placeholders filled."""
        return self.notices[name].format(**values)

    def in_chunk(self, name: str, **values: object) -> str:
        """The chunk text `name` (strings.toml [chunk]) with its placeholders filled."""
        return self.chunk[name].format(**values)


def _table(data: dict[str, Any], name: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in dict(data.get(name, {})).items()}


@lru_cache(maxsize=4)
def load_strings(path: Path | None = None) -> Strings:
    """The strings from `path`, or the bundled strings.toml."""
    if path is None:
        text = resources.files("rag_server.vocabulary").joinpath("strings.toml").read_text("utf-8")
    else:
        text = path.read_text("utf-8")
    data = tomllib.loads(text)
    return Strings(str(data["disclaimer"]), _table(data, "reasons"), _table(data, "facets"),
                   _table(data, "groups"), _table(data, "notices"), _table(data, "chunk"),
                   _table(data, "details"))
