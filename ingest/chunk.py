"""Chunk: section -> prose chunks of at most `max_tokens` (rag_server.text.count_tokens) + table block chunks.

Splitting prefers paragraph boundaries, then sentence boundaries; a single sentence over the ceiling is cut
on word boundaries as a last resort. A chunk never starts or ends inside a word, and the chunks of a
section cover its whole text, in order (nothing is dropped). Every chunk carries the pages its text spans.

chunk_id = {drug_id}__{section_key}__{part_index} (part_index from 0 in reading order); a lifted table is
{drug_id}__{section_key}__block__{table_id}, with the part_index of the prose chunk holding its marker, and
a table too large for one chunk is split by rows into table ids t1, t1p2, t1p3, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.regions import table_lines
from ingest.segment import LiftedTable, Monograph, Piece, Section
from rag_server.domain import Chunk, ChunkKind, SourceRef, block_id_for, chunk_id_for
from rag_server.text import count_tokens
from rag_server.vocabulary import Vocabulary

# A sentence ends at . ! ? ; (or …) followed by space and a letter, digit, bullet or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?;…])\s+(?=[\"“(\[\-–•+\d]|[^\W\d_])")


@dataclass
class SectionText:
    text: str
    spans: list[tuple[int, int, Piece]]  # [start, end) of each piece in `text`

    def pieces_in(self, start: int, end: int) -> list[Piece]:
        return [p for s, e, p in self.spans if s < end and e > start]


def assemble(pieces: list[Piece]) -> SectionText:
    """Pieces joined: a new paragraph on a line of its own; a line ending in '-' glued to the next."""
    parts: list[str] = []
    spans: list[tuple[int, int, Piece]] = []
    length = 0
    for piece in pieces:
        text = " ".join(piece.text.split())
        if not text:
            continue
        if parts:
            if piece.para_start:
                sep = "\n"
            elif parts[-1].endswith("-") and text[0].isalnum():
                sep = ""
            else:
                sep = " "
            parts.append(sep)
            length += len(sep)
        parts.append(text)
        spans.append((length, length + len(text), piece))
        length += len(text)
    return SectionText("".join(parts), spans)


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < end:
        out.append((pos, end))
    return out


def _words(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int, int]]:
    """Word windows of at most max_tokens each (a single overlong 'word' is kept whole)."""
    out: list[tuple[int, int, int]] = []
    win_start, win_end, win_tokens = -1, -1, 0
    for m in re.finditer(r"\S+", text[start:end]):
        s, e = start + m.start(), start + m.end()
        t = count_tokens(text[s:e])
        if win_start >= 0 and win_tokens + t > max_tokens:
            out.append((win_start, win_end, win_tokens))
            win_start = -1
        if win_start < 0:
            win_start, win_tokens = s, 0
        win_end = e
        win_tokens += t
    if win_start >= 0:
        out.append((win_start, win_end, win_tokens))
    return out


def _units(text: str, max_tokens: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) of paragraphs, or of sentences/word windows of paragraphs over the ceiling."""
    units: list[tuple[int, int, int]] = []
    pos = 0
    for para in text.split("\n"):
        start, end = pos, pos + len(para)
        pos = end + 1
        lead = len(para) - len(para.lstrip())
        start += lead
        end -= len(para) - len(para.rstrip())
        if start >= end:
            continue
        tokens = count_tokens(text[start:end])
        if tokens <= max_tokens:
            units.append((start, end, tokens))
            continue
        for s, e in _sentences(text, start, end):
            t = count_tokens(text[s:e])
            if t <= max_tokens:
                units.append((s, e, t))
            else:
                units.extend(_words(text, s, e, max_tokens))
    return units


def split_ranges(text: str, max_tokens: int) -> list[tuple[int, int]]:
    """[start, end) ranges of `text`, each at most max_tokens, packed greedily from paragraphs/sentences."""
    ranges: list[tuple[int, int]] = []
    cur_start, cur_end, cur_tokens = -1, -1, 0
    for start, end, tokens in _units(text, max_tokens):
        if cur_start >= 0 and cur_tokens + tokens <= max_tokens:
            cur_end, cur_tokens = end, cur_tokens + tokens
            continue
        if cur_start >= 0:
            ranges.append((cur_start, cur_end))
        cur_start, cur_end, cur_tokens = start, end, tokens
    if cur_start >= 0:
        ranges.append((cur_start, cur_end))
    return ranges


def _refs(document_id: str, pages: list[int], page_map: dict[int, int | None]) -> list[SourceRef]:
    seen: list[int] = []
    for page in pages:
        if page not in seen:
            seen.append(page)
    return [SourceRef(document_id, p, page_map.get(p) or 0) for p in seen]


def _block_chunks(mono: Monograph, section: Section, table: LiftedTable, title: str, part_index: int,
                  document_id: str, page_map: dict[int, int | None], max_tokens: int) -> list[Chunk]:
    """The table as one block chunk, or several (split by rows, a long row by words) under the ceiling;
    every part starts with the note that it must be checked against the page."""
    printed = page_map.get(table.page)
    where = f"trang PDF {table.page}" + (f", trang in {printed}" if printed else "")
    note = f"[Bảng trích tự động ({where}), mục «{title}» của {mono.drug_name}: phải đối chiếu với trang.]"
    header, rows = table_lines(table.rows)
    budget = max(1, max_tokens - count_tokens(note))
    lines: list[str] = [header] if header and count_tokens(header) < budget // 2 else []
    for row in rows:
        if count_tokens(row) <= budget:
            lines.append(row)
        else:
            lines.extend(row[s:e] for s, e, _ in _words(row, 0, len(row), budget))
    groups: list[list[str]] = [[]]
    used = 0
    for line in lines:
        t = count_tokens(line)
        if groups[-1] and used + t > budget:
            groups.append([])
            used = 0
        groups[-1].append(line)
        used += t
    out: list[Chunk] = []
    for k, group in enumerate(groups, start=1):
        table_id = table.table_id if k == 1 else f"{table.table_id}p{k}"
        out.append(Chunk(
            chunk_id=block_id_for(mono.drug_id, section.key, table_id), drug_id=mono.drug_id,
            drug_name=mono.drug_name, section_key=section.key, section_title=title, part_index=part_index,
            chunk_kind=ChunkKind.BLOCK, text="\n".join([note, *group]),
            source_refs=_refs(document_id, [table.page], page_map), requires_visual_check=True,
            table_id=table_id,
        ))
    return out


def chunk_section(mono: Monograph, section: Section, vocab: Vocabulary, document_id: str,
                  page_map: dict[int, int | None], max_tokens: int = 800) -> list[Chunk]:
    title = vocab.title(section.key)
    st = assemble(section.pieces)
    prose: list[Chunk] = []
    marker_part: dict[str, int] = {}
    for index, (start, end) in enumerate(split_ranges(st.text, max_tokens)):
        pieces = st.pieces_in(start, end)
        for piece in pieces:
            if piece.table_id:
                marker_part.setdefault(piece.table_id, index)
        prose.append(Chunk(
            chunk_id=chunk_id_for(mono.drug_id, section.key, index), drug_id=mono.drug_id,
            drug_name=mono.drug_name, section_key=section.key, section_title=title, part_index=index,
            chunk_kind=ChunkKind.PROSE, text=st.text[start:end],
            source_refs=_refs(document_id, [p.page for p in pieces], page_map),
            requires_visual_check=any(p.visual for p in pieces),
        ))
    blocks: list[Chunk] = []
    for table in section.tables:
        blocks.extend(_block_chunks(mono, section, table, title, marker_part.get(table.table_id, 0),
                                    document_id, page_map, max_tokens))
    return prose + blocks


def chunk_monograph(mono: Monograph, vocab: Vocabulary, document_id: str, page_map: dict[int, int | None],
                    max_tokens: int = 800) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in mono.sections:
        chunks.extend(chunk_section(mono, section, vocab, document_id, page_map, max_tokens))
    return chunks
