"""Accent folding and tokenisation shared by ingestion, understanding and retrieval.

Folding maps a Vietnamese string to lower-case ASCII: "Chống chỉ định" -> "chong chi dinh".
The look-alike U+00D0 (Ð, seen in OCR output) folds like U+0110 (Đ).
"""

from __future__ import annotations

import re
import unicodedata

_D_MAP = str.maketrans({"đ": "d", "Đ": "d", "Ð": "d", "ð": "d"})
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_WORD = re.compile(r"[0-9a-z]+")


def fold(text: str) -> str:
    """Lower-case, strip diacritics (đ -> d), collapse whitespace."""
    text = unicodedata.normalize("NFC", text).translate(_D_MAP)
    decomposed = unicodedata.normalize("NFD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.lower().split())


def slugify(title: str, sep: str = "-") -> str:
    """`ACID ACETYLSALICYLIC` -> `acid-acetylsalicylic` (runs of non-alphanumerics -> sep)."""
    return _NON_ALNUM.sub(sep, fold(title)).strip(sep)


def tokens(text: str) -> list[str]:
    """Folded alphanumeric word tokens."""
    return _WORD.findall(fold(text))


def word_count(text: str) -> int:
    return len(text.split())


def phrase_positions(phrase_tokens: list[str], text_tokens: list[str]) -> list[int]:
    """Token offsets where `phrase_tokens` occurs contiguously in `text_tokens` (word-boundary exact)."""
    n = len(phrase_tokens)
    if n == 0 or n > len(text_tokens):
        return []
    first = phrase_tokens[0]
    return [
        i for i, tok in enumerate(text_tokens[: len(text_tokens) - n + 1])
        if tok == first and text_tokens[i : i + n] == phrase_tokens
    ]
