"""Token counting for chunk ceilings and context budgets.

A deterministic approximation of a sub-word tokenizer: every word costs one token plus one per
4 characters beyond the first 4, and every punctuation mark one. Vietnamese syllables are short,
so this over-counts slightly, which keeps the 800-token ceiling and the 6,000-token budget safe.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    total = 0
    for piece in _PIECE.findall(text):
        total += 1 + max(0, (len(piece) - 1) // 4) if piece[0].isalnum() or piece[0] == "_" else 1
    return total
