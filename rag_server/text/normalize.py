"""The one normalisation of text in the service, shared by ingestion, understanding, retrieval, answers and
the audit record (tokens: text.match), in three strengths:

* `nfc` / `nfkc`: the Unicode forms (stored text and digests are NFC; the tokenizer reads NFKC, so a
  full-width letter is a plain letter);
* `normalised` / `canonical`: case, spacing and Unicode form ignored, accents kept (lower-cased NFC, runs
  of white space as one space): how a claim is compared with its chunk, how a query embedding is cached;
* `fold`: accents ignored too, lower-case ASCII: "Chống chỉ định" -> "chong chi dinh". The look-alike
  U+00D0 (Ð, seen in OCR output) folds like U+0110 (Đ).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_D_MAP = str.maketrans({"đ": "d", "Đ": "d", "Ð": "d", "ð": "d"})
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def nfc(text: str) -> str:
    """Canonical composition (NFC)."""
    return unicodedata.normalize("NFC", text)


# An open syllable ending in "oa", "oe" or "uy" carries its tone on either vowel, by the older or the
# newer spelling ("hoá" / "hóa", "thuỷ" / "thủy", "khoẻ" / "khỏe"). After "q" the "u" is the consonant's.
_OLD_TONE = re.compile(r"(?<!q)([ou])([áàảãạéèẻẽẹýỳỷỹỵ])$")
_TONES = frozenset("\u0301\u0300\u0309\u0303\u0323")
_TONE_PAIRS = frozenset({("o", "a"), ("o", "e"), ("u", "y")})


def newer_tone(word: str) -> str:
    """A lower-case NFC word with its tone placed by the newer spelling, the formulary's ("hoá": "hóa")."""
    m = _OLD_TONE.search(word)
    if m is None:
        return word
    parts = unicodedata.normalize("NFD", m.group(2))
    tone = "".join(c for c in parts if c in _TONES)
    if (m.group(1), parts[0]) not in _TONE_PAIRS:
        return word
    rest = "".join(c for c in parts if c not in _TONES)
    return word[: m.start()] + unicodedata.normalize("NFC", m.group(1) + tone) + rest


def nfkc(text: str) -> str:
    """Compatibility composition (NFKC): full-width letters, ligatures and the like as plain letters."""
    return unicodedata.normalize("NFKC", text)


def _normalise(text: str) -> tuple[str, tuple[int, ...]]:
    text = nfc(text)
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            space = bool(out)
            continue
        if space:
            out.append(" ")
            where.append(i)
            space = False
        out.append(ch.lower())
        where.append(i)
    return "".join(out), tuple(where)


@lru_cache(maxsize=1024)
def normalised(text: str) -> tuple[str, tuple[int, ...]]:
    """Lower-cased NFC text with runs of whitespace as one space (none at either end), and the offset in
    the NFC text of each of its characters (cached: an answer compares many claims with the same few
    chunks)."""
    return _normalise(text)


def canonical(text: str) -> str:
    """`normalised` text without its offsets (not cached): equal for texts differing only in case, spacing
    and Unicode form."""
    return _normalise(text)[0]


def _fold_slow(text: str) -> str:
    """The definition: NFC, đ -> d, NFD, combining marks dropped, lower case, whitespace collapsed."""
    text = unicodedata.normalize("NFC", text).translate(_D_MAP)
    decomposed = unicodedata.normalize("NFD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.lower().split())


def _fold_table() -> dict[int, str | None]:
    """Every Latin letter with diacritics (Latin-1, Extended-A/B, Vietnamese) -> its folded base, and the
    combining diacritics -> nothing: one str.translate does what _fold_slow does for these characters."""
    table: dict[int, str | None] = {cp: None for cp in range(0x300, 0x370) if unicodedata.combining(chr(cp))}
    for cp in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        folded = _fold_slow(chr(cp))
        if folded.isascii() and " " not in folded:
            table[cp] = folded
    for ch in "đĐÐð":
        table[ord(ch)] = "d"
    return table


_FOLD = _fold_table()


def fold(text: str) -> str:
    """Lower-case, strip diacritics (đ -> d), collapse whitespace. Equal to _fold_slow on every input: one
    table lookup per character, and the definition itself when anything else is left."""
    quick = text.translate(_FOLD)
    if not quick.isascii():
        return _fold_slow(text)
    return " ".join(quick.lower().split())


def slugify(title: str, sep: str = "-") -> str:
    """`ACID ACETYLSALICYLIC` -> `acid-acetylsalicylic` (runs of non-alphanumerics -> sep)."""
    return _NON_ALNUM.sub(sep, fold(title)).strip(sep)


def word_count(text: str) -> int:
    return len(text.split())
