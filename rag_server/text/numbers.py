"""Numbers as they are written in the formulary: `2,5 mg`, `1/1 000`, `0.5`, `10 - 20`."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d+(?:[ \u00a0]\d{3})*(?:[.,]\d+)?")


def extract_numbers(text: str) -> set[str]:
    """Canonical numbers in `text`: thousands spaces removed, decimal comma -> dot."""
    found: set[str] = set()
    for match in _NUMBER.findall(text):
        canon = match.replace("\u00a0", "").replace(" ", "").replace(",", ".")
        if "." in canon:
            canon = canon.rstrip("0").rstrip(".") or "0"
        found.add(canon)
    return found
