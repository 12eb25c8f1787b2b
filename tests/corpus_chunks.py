"""Chunks of the REAL formulary text, built at run time from ../shared/corpus (never copied into the repo).

A small test-side Markdown reader (not the product's PDF ingestion): the 12 monographs are split at
heading-like lines into sections (vocabulary.heading_key), identity lines ("Tên chung quốc tế: ...") become
their own sections, and sections are cut into paragraph chunks of at most ~300 words. printed_page is the
last folio seen in a running-header line ("DTQGVN 2 Paracetamol 1119"), so provenance is approximate.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag_server.domain import Chunk, ChunkKind, SourceRef, chunk_id_for
from rag_server.text import slugify
from rag_server.vocabulary import load_vocabulary

EXCERPT_TITLES = ["ABACAVIR", "ACARBOSE", "ACEBUTOLOL", "ACENOCOUMAROL", "ACETAZOLAMID"]
MAX_WORDS = 300
_HEADER = re.compile(r"DTQGVN")
_FOLIO = re.compile(r"(?:^|\s)(\d{2,4})(?:\s|$)")
_IDENTITY = re.compile(r"^[#*\s]*(T[eê]n chung qu[oố]c t[eế]|M[aã] ATC|Lo[aạ]i thu[oố]c)\s*[:*]*\s*(.*)$")


def monograph_texts(corpus_dir: Path) -> dict[str, str]:
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted((corpus_dir / "monographs").glob("*.md"))}
    excerpt = next(corpus_dir.glob("dtqg2018_*.md")).read_text(encoding="utf-8")
    starts = [re.search(rf"^#+\s*\**{t}\**\s*$", excerpt, re.M) for t in EXCERPT_TITLES]
    offsets = [m.start() for m in starts if m is not None]
    if len(offsets) != len(EXCERPT_TITLES):
        raise RuntimeError("excerpt titles not found")
    for title, begin, end in zip(EXCERPT_TITLES, offsets, [*offsets[1:], len(excerpt)], strict=True):
        texts[title.lower()] = excerpt[begin:end]
    return texts


def _clean(line: str) -> str:
    return re.sub(r"<[^>]+>", "", line).replace("**", "").replace("*", "").strip()


def monograph_chunks(markdown: str, document_id: str = "corpus-md") -> list[Chunk]:
    vocab = load_vocabulary()
    lines = markdown.splitlines()
    title = _clean(re.sub(r"^#+", "", lines[0]))
    drug_id = slugify(re.sub(r"\([^()]*\)", " ", title))
    sections: list[tuple[str, list[tuple[str, int]]]] = []
    folio = 0
    current: list[tuple[str, int]] | None = None
    for line in lines[1:]:
        if _HEADER.search(line):
            numbers = _FOLIO.findall(re.sub(r"[*#]", " ", line))
            if numbers:
                folio = int(numbers[-1])
            continue
        identity = _IDENTITY.match(line)
        label = re.sub(r"[#*_]", "", line).strip().rstrip(":").strip()
        key = vocab.heading_key(identity.group(1)) if identity else None
        if key is None and label and len(label) < 45 and not label.endswith("."):
            key = vocab.heading_key(label)
        if key is not None:
            current = []
            sections.append((key, current))
            if identity and identity.group(2).strip():
                current.append((_clean(identity.group(2)), folio))
            continue
        text = _clean(line)
        if text and current is not None:
            current.append((text, folio))
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for key, paragraphs in sections:
        parts: list[tuple[str, int]] = []
        words = 0
        for text, page in paragraphs:
            n = len(text.split())
            if parts and words + n > MAX_WORDS:
                chunks.append(_chunk(drug_id, title, key, seen, parts, vocab.title(key), document_id))
                parts, words = [], 0
            parts.append((text, page))
            words += n
        if parts:
            chunks.append(_chunk(drug_id, title, key, seen, parts, vocab.title(key), document_id))
    return chunks


def _chunk(
    drug_id: str,
    title: str,
    key: str,
    seen: dict[str, int],
    parts: list[tuple[str, int]],
    section_title: str,
    document_id: str,
) -> Chunk:
    part_index = seen.get(key, 0)
    seen[key] = part_index + 1
    page = next((p for _, p in parts if p), 0) or 1
    return Chunk(
        chunk_id=chunk_id_for(drug_id, key, part_index),
        drug_id=drug_id,
        drug_name=title,
        section_key=key,
        section_title=section_title,
        part_index=part_index,
        chunk_kind=ChunkKind.PROSE,
        text="\n".join(t for t, _ in parts),
        source_refs=[SourceRef(document_id, page + 2, page)],
    )


def corpus_chunks(corpus_dir: Path) -> list[Chunk]:
    return [c for text in monograph_texts(corpus_dir).values() for c in monograph_chunks(text)]
