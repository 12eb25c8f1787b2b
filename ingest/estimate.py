"""How long the full book would take, from what this run measured.

The full formulary has about `RAG_FULL_BOOK_MONOGRAPHS` monographs (691: the drug list of Phụ lục 3). From
this run: pages and chunks per monograph scale the book's pages and chunks; the build rate (pages/s of
parse, segment, chunk and gates) and the embedding rate (texts/s of texts actually embedded with the
configured embedder, cache hits excluded) give the time. Without an embedding rate (everything came from
the cache, `--check`, or nothing was parsed) there is no estimate, and the note says why. Loading into
the store (seconds for the book) is left out. The rate is this machine's and this embedder's: a hosted
embedder's rate depends on the network, the concurrency (RAG_EMBED_CONCURRENCY) and its rate limits.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FullBookEstimate:
    monographs: int  # in the full book
    available: bool
    note: str  # why it is unavailable, or what it assumes
    pages: int = 0
    chunks: int = 0
    parse_seconds: float = 0.0
    embed_seconds: float = 0.0
    embedding_model: str = ""

    @property
    def total_seconds(self) -> float:
        return self.parse_seconds + self.embed_seconds


def estimate_full_book(monographs_in_book: int, *, pages: int, monographs: int, chunks: int,
                       build_seconds: float, embedded: int, embed_seconds: float,
                       embedding_model: str) -> FullBookEstimate:
    """The estimate from this run's counts and measured rates (see the module doc)."""
    if monographs <= 0 or chunks <= 0 or pages <= 0 or build_seconds <= 0:
        return FullBookEstimate(monographs_in_book, False, "unavailable: this run built no chunks")
    if embedded <= 0 or embed_seconds <= 0:
        return FullBookEstimate(monographs_in_book, False, "unavailable: nothing was embedded in this run "
                                "(every embedding came from the cache, or the run stopped before embedding)")
    scale = monographs_in_book / monographs
    book_pages, book_chunks = round(pages * scale), round(chunks * scale)
    return FullBookEstimate(
        monographs=monographs_in_book, available=True,
        note=f"from {monographs} monographs, {pages / build_seconds:.1f} pages/s built and "
             f"{embedded / embed_seconds:.2f} chunks/s embedded; loading not included",
        pages=book_pages, chunks=book_chunks, parse_seconds=book_pages * build_seconds / pages,
        embed_seconds=book_chunks * embed_seconds / embedded, embedding_model=embedding_model,
    )


def duration(seconds: float) -> str:
    """'42 s', '12.5 min', '3.2 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
