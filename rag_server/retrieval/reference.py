"""Cross-references between sections of one monograph ("Xem mục Quá liều và xử trí.").

A section whose whole prose is short and points to another section ("Xem mục …", "Xem phần …",
"Xem mục "…"", "(xem Thận trọng)", "Xem thêm mục …") reads as an empty answer on its own: the section
route appends the section pointed to (one hop, never to itself). A pointer inside a long section is left
alone: that section is the answer.

The heading after "xem [thêm] [mục|phần]" (the words of sections.toml [pointer]) is the longest run of the
following words that `Vocabulary.heading_key` resolves (case, accents, quotes and punctuation ignored).
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_server.domain import Chunk, ChunkKind
from rag_server.text.match import folded_words
from rag_server.vocabulary import Vocabulary

MAX_POINTER_WORDS = 40  # a section of at most this many words (exclusive) may be a mere pointer
MAX_HEADING_WORDS = 10


def prose_text(chunks: Iterable[Chunk]) -> str:
    """The prose of a section, parts in order (blocks excluded)."""
    prose = sorted((c for c in chunks if c.chunk_kind == ChunkKind.PROSE), key=lambda c: c.part_index)
    return "\n".join(c.text for c in prose)


def referenced_sections(text: str, vocabulary: Vocabulary) -> list[str]:
    """Section keys named after each "xem [thêm] [mục|phần]" in `text`, in order, without repeats."""
    pointer = vocabulary.pointer
    words = folded_words(text)
    found: list[str] = []
    for i, word in enumerate(words):
        if word not in pointer.see:
            continue
        j = i + 1
        if j < len(words) and words[j] in pointer.also:
            j += 1
        if j < len(words) and words[j] in pointer.kinds:
            j += 1
        key = _longest_heading(words[j : j + MAX_HEADING_WORDS], vocabulary)
        if key is not None and key not in found:
            found.append(key)
    return found


def _longest_heading(words: list[str], vocabulary: Vocabulary) -> str | None:
    for n in range(len(words), 0, -1):
        key = vocabulary.heading_key(" ".join(words[:n]))
        if key is not None:
            return key
    return None


def pointer_targets(section_key: str, text: str, vocabulary: Vocabulary) -> list[str]:
    """The other sections a short section merely points to ([] for a long section or no pointer)."""
    if len(folded_words(text)) >= MAX_POINTER_WORDS:
        return []
    return [k for k in referenced_sections(text, vocabulary) if k != section_key]
