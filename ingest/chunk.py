"""Chunk: section -> prose chunks of at most `max_tokens` (rag_server.text.count_tokens) + table block chunks.

Splitting prefers paragraph boundaries, then sentence boundaries; a single sentence over the ceiling is cut
on word boundaries as a last resort. A chunk never starts or ends inside a word, and the chunks of a
section cover its whole text, in order (nothing is dropped). Every chunk carries the pages its text spans.

chunk_id = {drug_id}__{section_key}__{part_index} (part_index from 0 in reading order); a lifted table is
{drug_id}__{section_key}__block__{table_id}, with the part_index of the prose chunk holding its marker, and
a table too large for one chunk is split by rows into table ids t1, t1p2, t1p3, ...

What must be read on the page is marked where it is: a prose chunk lists the [start, end) ranges of its
text that are (a 2-D formula, a table marker, the rows of a small table broken at a column end) in
`visual_spans`, and is `requires_visual_check` only when its whole text is; a table block always is, and
carries its cells (`table_rows`, header row first in every part) and the PNG of the printed table. Every
chunk keeps, for each printed line of its text, the range of its text and the line's box on its page
(`boxes`, points rounded to 0.1): a block chunk, the table's box for its whole text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.layout import BBox
from ingest.regions import clean_cell, table_lines
from ingest.segment import LiftedTable, Monograph, Piece, Section
from rag_server.domain import Chunk, ChunkKind, SourceRef, TextBox, block_id_for, chunk_id_for
from rag_server.text import count_tokens
from rag_server.vocabulary import Vocabulary
from rag_server.vocabulary.strings import load_strings

# A sentence ends at . ! ? ; (or …) followed by space and a letter, digit, bullet or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?;…])\s+(?=[\"“(\[\-–•+\d]|[^\W\d_])")


@dataclass
class SectionText:
    text: str
    spans: list[tuple[int, int, Piece]]  # [start, end) of each piece in `text`

    def pieces_in(self, start: int, end: int) -> list[Piece]:
        return [p for s, e, p in self.spans if s < end and e > start]

    def spans_in(self, start: int, end: int) -> list[tuple[int, int, Piece]]:
        """The pieces of [start, end) with their ranges cut to it, relative to `start`."""
        return [(max(s, start) - start, min(e, end) - start, p) for s, e, p in self.spans
                if s < end and e > start]


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


def _box(start: int, end: int, page: int, bbox: BBox) -> TextBox:
    x0, y0, x1, y1 = bbox
    return TextBox(start, end, page, round(x0, 1), round(y0, 1), round(x1, 1), round(y1, 1))


def visual_spans(text: str, spans: list[tuple[int, int, Piece]]) -> list[tuple[int, int]]:
    """The ranges of visual pieces, those separated only by white space joined."""
    out: list[tuple[int, int]] = []
    for start, end, piece in spans:
        if not piece.visual:
            continue
        if out and not text[out[-1][1]:start].strip():
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def wholly_visual(text: str, spans: list[tuple[int, int]]) -> bool:
    """Every character of `text` but white space lies in a visual span."""
    pos = 0
    for start, end in spans:
        if text[pos:start].strip():
            return False
        pos = end
    return not text[pos:].strip()


def _row_groups(header: str | None, rows: list[str], budget: int) -> list[list[tuple[str, int]]]:
    """The table's lines (the header line, then the rows; a row over the budget cut by words) grouped
    under the budget, each line with the index of its row (-1: the header)."""
    lines: list[tuple[str, int]] = [(header, -1)] if header and count_tokens(header) < budget // 2 else []
    for n, row in enumerate(rows):
        if count_tokens(row) <= budget:
            lines.append((row, n))
        else:
            lines.extend((row[s:e], n) for s, e, _ in _words(row, 0, len(row), budget))
    groups: list[list[tuple[str, int]]] = [[]]
    used = 0
    for line, n in lines:
        t = count_tokens(line)
        if groups[-1] and used + t > budget:
            groups.append([])
            used = 0
        groups[-1].append((line, n))
        used += t
    return groups


def _cells(table: LiftedTable) -> tuple[list[list[str]], int]:
    """The table's rows as `table_lines` reads them (cells' white space normalised, empty rows dropped),
    and the index of the row its first body line reads (1 after a header line, else 0)."""
    rows = [[clean_cell(c) for c in row] for row in table.rows]
    rows = [row for row in rows if any(row)]
    return rows, int(len(rows) > 1 and all(rows[0]))


def _part_rows(rows: list[list[str]], first_body: int, group: list[tuple[str, int]]) -> list[list[str]]:
    """The cells of one part of a table: the first (header) row, then the rows its lines read."""
    held = dict.fromkeys(n + first_body for _, n in group if n >= 0)
    return [list(rows[0]), *(list(rows[n]) for n in held if n != 0)] if rows else []


def _block_chunks(mono: Monograph, section: Section, table: LiftedTable, title: str, part_index: int,
                  document_id: str, page_map: dict[int, int | None], max_tokens: int) -> list[Chunk]:
    """The table as one block chunk, or several (split by rows, a long row by words) under the ceiling;
    every part starts with the note that it must be checked against the page."""
    printed = page_map.get(table.page)
    strings = load_strings()  # strings.toml [chunk]
    where = (strings.in_chunk("table_where_printed", page=table.page, printed=printed) if printed
             else strings.in_chunk("table_where", page=table.page))
    note = strings.in_chunk("table_note", where=where, section=title, drug=mono.drug_name)
    header, rows = table_lines(table.rows)
    cells, first_body = _cells(table)
    budget = max(1, max_tokens - count_tokens(note))
    out: list[Chunk] = []
    for k, group in enumerate(_row_groups(header, rows, budget), start=1):
        table_id = table.table_id if k == 1 else f"{table.table_id}p{k}"
        text = "\n".join([note, *(line for line, _ in group)])
        out.append(Chunk(
            chunk_id=block_id_for(mono.drug_id, section.key, table_id), drug_id=mono.drug_id,
            drug_name=mono.drug_name, section_key=section.key, section_title=title, part_index=part_index,
            chunk_kind=ChunkKind.BLOCK, text=text,
            source_refs=_refs(document_id, [table.page], page_map), requires_visual_check=True,
            table_id=table_id, table_rows=_part_rows(cells, first_body, group), table_png=table.png,
            boxes=[_box(0, len(text), table.page, table.bbox)],
        ))
    return out


def chunk_section(mono: Monograph, section: Section, vocab: Vocabulary, document_id: str,
                  page_map: dict[int, int | None], max_tokens: int = 800) -> list[Chunk]:
    title = vocab.title(section.key)
    st = assemble(section.pieces)
    prose: list[Chunk] = []
    marker_part: dict[str, int] = {}
    for index, (start, end) in enumerate(split_ranges(st.text, max_tokens)):
        spans = st.spans_in(start, end)
        for _, _, piece in spans:
            if piece.table_id:
                marker_part.setdefault(piece.table_id, index)
        text = st.text[start:end]
        visual = visual_spans(text, spans)
        prose.append(Chunk(
            chunk_id=chunk_id_for(mono.drug_id, section.key, index), drug_id=mono.drug_id,
            drug_name=mono.drug_name, section_key=section.key, section_title=title, part_index=index,
            chunk_kind=ChunkKind.PROSE, text=text,
            source_refs=_refs(document_id, [p.page for _, _, p in spans], page_map),
            requires_visual_check=wholly_visual(text, visual), visual_spans=visual,
            boxes=[_box(s, e, p.page, p.bbox) for s, e, p in spans],
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
