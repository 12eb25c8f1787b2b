"""Segment: lines in reading order -> monographs -> sections (pure; headings mapped only by the vocabulary).

Monograph title: a standalone line, bold or larger than body text, whose letters outside parentheses are all
upper case ("AMLODIPIN", "ACID ACETYLSALICYLIC", "PARACETAMOL (Acetaminophen)"), that is not itself a section
heading and is followed within 3 lines by an identity line (Tên chung quốc tế / Mã ATC / Loại thuốc) or, when
the title is larger than body text, by a section heading. A title may wrap onto a second line of its style.
  drug_id = slug of the title without its parenthetical parts
  ("PARACETAMOL (Acetaminophen)" -> "paracetamol");
  drug_name = the title as printed; the parenthetical parts are kept as aliases.
A much larger upper-case line that is not a title (a chapter or appendix heading) ends the current monograph
(recorded in `Monograph.ended_by`). A name in the running header never starts a monograph: parse removes the
furniture, and a title that repeats another title's drug_id among the first lines of a page (a header name
left in the text) is dropped; the one confirmed by an identity line (else the first) is the monograph.

Section headings, all through `Vocabulary.heading_key()` (never special-cased here):
  * identity lines "Label: value" (label bold or plain, misspelt variants in the vocabulary, value on the
    same line or the next),
  * a bold or italic run mapping to a key, at the start of a line or after the end of a sentence, and not
    followed by lower-case text (run-in headings: "**Loại thuốc**: Chống co giật. **Dạng thuốc và hàm
    lượng** Nang ..."); a bold heading wrapped onto two lines is joined first,
  * a whole plain line mapping to a key when it starts a block (after a gap, or after a finished sentence):
    "Dược động học" as a plain line inside "Dược lý và cơ chế tác dụng".
A heading whose key the monograph already has stays body text (kept in `ignored_headings`). Unknown bold
lines ("Người lớn:") are body text. Table markers from parse become pieces that refer to lifted tables, except
a table of identity lines (label | value, drawn with or without rules), which is read back as those lines.
"""

from __future__ import annotations

import re
import statistics
import weakref
from dataclasses import dataclass, field

from ingest.layout import BBox, ParsedDocument, Span, TableRegion, TextLine
from rag_server.text import slugify
from rag_server.vocabulary import Vocabulary

_PAREN = re.compile(r"\([^()]*\)")
_BULLET = re.compile(r"^\s*(?:[-–—•+*▪◦·]\s|\(?\d{1,2}[.)]\s|[a-zđ][.)]\s)")
_TERMINAL = (".", ":", ";", "!", "?", ")", "]", "…")
_SENTENCE_END = (".", "!", "?", "…")
_LABEL = re.compile(r"^\s*([^:：]{2,40}?)\s*[:：]\s*")
_WORD = re.compile(r"\S+")
_ENUM = re.compile(r"^\s*(?:\d{1,2}(?:\.\d{1,2})*|[IVX]{1,4}|[A-Za-z])\s*[.)]\s+")
_QUOTES = ('"', "“", "”", "'", "‘", "’", "«", "»")
_CONFIRM_WITHIN = 3  # a title is followed by an identity line (or, if larger than body text, a heading)


_NO_BOX: BBox = (0.0, 0.0, 0.0, 0.0)


@dataclass
class Piece:
    text: str
    page: int
    para_start: bool = False
    visual: bool = False  # to be read on the page (a 2-D formula, a table marker, a small broken table)
    table_id: str = ""  # monograph-level table id when this piece is a table marker
    bbox: BBox = _NO_BOX  # where it is printed on `page`: its line's box, or the part of the line it holds


@dataclass
class LiftedTable:
    table_id: str
    page: int
    rows: list[list[str]]
    bbox: BBox = _NO_BOX  # the table region on `page` (PDF points, origin top left)
    png: bytes = b""  # the region rendered at ingest (ingest.table_images), once segmentation is done


@dataclass
class Section:
    key: str
    heading: str
    page: int
    pieces: list[Piece] = field(default_factory=list)
    tables: list[LiftedTable] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.pieces).strip()


@dataclass
class Monograph:
    drug_id: str
    title: str
    drug_name: str
    aliases: list[str]
    page: int
    sections: list[Section] = field(default_factory=list)
    unassigned: list[Piece] = field(default_factory=list)
    ignored_headings: list[str] = field(default_factory=list)
    ended_by: str = ""  # a large upper-case non-title line that ended the monograph before the next title

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)


_KEYS: tuple[weakref.ref[Vocabulary], dict[str, str | None]] | None = None  # the last vocabulary's lookups
_KEYS_KEPT = 200_000  # lookups remembered (a book has many distinct lines; the cache restarts past this)


def _key(vocab: Vocabulary, text: str) -> str | None:
    """Section key of a printed heading; a numbered heading ("3. CHỈ ĐỊNH", "IV) Thận trọng") is looked up
    without its number. Remembered per text: segmentation asks about the same line several times."""
    global _KEYS
    entry = _KEYS
    if entry is None or entry[0]() is not vocab:
        entry = _KEYS = (weakref.ref(vocab), {})
    known = entry[1]
    if text in known:
        return known[text]
    key = vocab.heading_key(text)
    if key is None:
        m = _ENUM.match(text)
        if m:
            key = vocab.heading_key(text[m.end():])
    if len(known) >= _KEYS_KEPT:
        known.clear()
    known[text] = key
    return key


def split_title(title: str) -> tuple[str, list[str]]:
    """('PARACETAMOL (Acetaminophen)') -> ('PARACETAMOL', ['Acetaminophen'])."""
    aliases = [m.group(0)[1:-1].strip() for m in _PAREN.finditer(title)]
    main = " ".join(_PAREN.sub(" ", title).split())
    return main, [a for a in aliases if a]


def drug_id_for(title: str) -> str:
    return slugify(split_title(title)[0])


# --- per-line context --------------------------------------------------------------------------------


@dataclass
class _Ctx:
    lines: list[TextLine]
    body_size: float
    para: list[bool]
    block_start: list[bool]


def identity_rows(rows: list[list[str]], vocab: Vocabulary) -> list[tuple[str, str]] | None:
    """(label, value) of a table that holds the identity lines (label | value), else None: its first row's
    label is an identity label, and so are most rows' (a row without a label continues the value above; a
    label wrapped over two rows, "Loại" / "thuốc", is joined)."""
    cells = [[" ".join(c.split()) for c in row if c and c.strip()] for row in rows]
    cells = [row for row in cells if row]
    pairs: list[tuple[str, str]] = []
    identity = set(vocab.identity_sections)
    labelled = 0
    i = 0
    while i < len(cells):
        take, label, key = 1, cells[i][0].rstrip(" :："), None
        for n in range(1, min(3, len(cells) - i) + 1):
            joined = " ".join(row[0] for row in cells[i: i + n]).rstrip(" :：")
            if _key(vocab, joined) is not None:
                take, label, key = n, joined, _key(vocab, joined)
                break
        values = [v for row in cells[i: i + take] for v in row[1:]]
        if key is not None and values:
            labelled += key in identity
            pairs.append((label, " ".join(values)))
        elif pairs:
            pairs[-1] = (pairs[-1][0], f"{pairs[-1][1]} {' '.join(cells[i])}")
        else:
            return None
        i += take
    if not pairs or _key(vocab, pairs[0][0]) not in identity or labelled < 0.6 * len(pairs):
        return None
    return pairs


def expand_identity_tables(lines: list[TextLine], tables: dict[str, TableRegion],
                           vocab: Vocabulary) -> list[TextLine]:
    """A table marker whose table holds the identity lines becomes those lines ("**Label:** value"), one
    per row, in the table's place: identity lines drawn as a ruled table are read as identity lines."""
    out: list[TextLine] = []
    for line in lines:
        table = tables.get(line.table_id) if line.table_id else None
        pairs = identity_rows(table.rows, vocab) if table is not None else None
        if pairs is None:
            out.append(line)
            continue
        x0, y0, x1, y1 = line.bbox
        step = (y1 - y0) / len(pairs)
        for k, (label, value) in enumerate(pairs):
            box = (x0, y0 + k * step, x1, y0 + (k + 1) * step)
            size = line.spans[0].size if line.spans else 10.0
            out.append(TextLine(spans=[Span(f"{label}:", size=size, bold=True, bbox=box, baseline=box[3]),
                                       Span(f" {value}", size=size, bbox=box, baseline=box[3])],
                                page=line.page, bbox=box, column=line.column))
    return out


def _context(doc: ParsedDocument, vocab: Vocabulary) -> _Ctx:
    tables = {tid: t for page in doc.pages for tid, t in page.tables.items()}
    lines = expand_identity_tables([ln for page in doc.pages for ln in page.lines], tables, vocab)
    lines = rejoin_split_headings(lines, vocab)
    col_right: dict[tuple[int, int], float] = {}
    for ln in lines:
        key = (ln.page, ln.column)
        col_right[key] = max(col_right.get(key, 0.0), ln.x1)
    gaps: list[float] = []
    prev_same: list[TextLine | None] = []
    for i, ln in enumerate(lines):
        prev = lines[i - 1] if i > 0 else None
        stacked = prev is not None and prev.page == ln.page and prev.column == ln.column and ln.y0 > prev.y0
        prev_same.append(prev if stacked else None)
        if stacked and prev is not None:
            gaps.append(ln.y0 - prev.y1)
    typical = statistics.median(gaps) if gaps else 0.0
    para: list[bool] = []
    block: list[bool] = []
    for i, ln in enumerate(lines):
        prev = lines[i - 1] if i > 0 else None
        size = max(ln.size, 1.0)
        prev_text = prev.text.rstrip() if prev is not None else ""
        ended = prev is None or prev_text.endswith(_TERMINAL) or bool(prev.table_id)
        same = prev_same[i]
        gap_break = same is not None and (ln.y0 - same.y1) > typical + 0.3 * size
        short_prev = prev is not None and ended and \
            prev.x1 < col_right.get((prev.page, prev.column), prev.x1) - 2.5 * size
        bullet = bool(_BULLET.match(ln.text))
        finished = prev is None or prev_text.endswith(_SENTENCE_END) or bool(prev.table_id)
        para.append(prev is None or gap_break or short_prev or bullet or bool(ln.table_id)
                    or (same is None and finished))
        block.append(prev is None or gap_break or ended or prev.all_bold)
    return _Ctx(lines=lines, body_size=doc.body_size, para=para, block_start=block)


# --- runs and headings -------------------------------------------------------------------------------


@dataclass
class _Run:
    text: str
    start: int
    styled: bool


def _runs(line: TextLine) -> list[_Run]:
    """Runs of styled (bold or italic) and plain text of a line (read-only: computed once per line)."""
    return line.derived("segment_runs", _line_runs)


def _line_runs(line: TextLine) -> list[_Run]:
    runs: list[_Run] = []
    pos = 0
    for span in line.spans:
        styled = span.styled if span.text.strip() else (runs[-1].styled if runs else False)
        if runs and runs[-1].styled == styled:
            runs[-1].text += span.text
        else:
            runs.append(_Run(span.text, pos, styled))
        pos += len(span.text)
    return runs


def _follow_ok(rest: str) -> bool:
    rest = rest.lstrip()
    return not rest or not rest[0].isalpha() or rest[0].isupper()


def _identity_split(line: TextLine, vocab: Vocabulary, zone: bool) -> tuple[str, int, int] | None:
    """(key, label end, value start) of an identity line, else None."""
    text = line.text
    identity = set(vocab.identity_sections)
    m = _LABEL.match(text)
    if m:
        key = _key(vocab, m.group(1))
        if key in identity:
            return key, m.end(1), m.end()
    runs = _runs(line)
    if runs and runs[0].styled and runs[0].text.strip():
        key = _key(vocab, runs[0].text)
        if key in identity and _follow_ok(text[len(runs[0].text):].lstrip(" :：")):
            end = len(runs[0].text)
            start = end + (len(text[end:]) - len(text[end:].lstrip(" :：")))
            return key, end, start
    if zone:
        words = list(_WORD.finditer(text))
        for n in range(min(5, len(words) - 1), 1, -1):
            label = text[: words[n - 1].end()]
            key = _key(vocab, label)
            if key in identity:
                start = words[n].start()
                return key, words[n - 1].end(), start
    return None


Fragment = tuple[str, str, str]  # ("heading", key, printed) | ("text", "", text)


def _split_line(line: TextLine, vocab: Vocabulary, zone: bool, block_start: bool) -> list[Fragment]:
    text = line.text
    out: list[Fragment] = []
    offset = 0
    ident = _identity_split(line, vocab, zone)
    if ident is not None:
        key, _label_end, value_start = ident
        out.append(("heading", key, text[:value_start].strip()))
        offset = value_start
    cut = offset
    for run in _runs(line):
        if not run.styled or run.start + len(run.text) <= offset:
            continue
        start = max(run.start, offset)
        label = text[start: run.start + len(run.text)]
        found = _key(vocab, label)
        if found is None or not label.strip():
            continue
        before = text[cut:start].strip()
        if before and not before.endswith(_TERMINAL):
            continue
        end = run.start + len(run.text)
        if not _follow_ok(text[end:].lstrip(" :：.")):
            continue
        end += len(text[end:]) - len(text[end:].lstrip(" :："))
        if before:
            out.append(("text", "", before))
        out.append(("heading", found, text[start:end].strip()))
        cut = end
    rest = text[cut:].strip().lstrip(":：").strip()
    if not out and block_start and _bare_heading_text(text):
        whole = _key(vocab, text)
        if whole is not None:
            return [("heading", whole, text.strip())]
    if rest:
        out.append(("text", "", rest))
    return out


def _bare_heading_text(text: str) -> bool:
    """A plain line can be a heading only as bare words: not quoted ('xin đọc phần: "Quá liều và xử
    trí".' wrapped onto its own line is a cross-reference) and not ending a sentence."""
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith(_QUOTES) \
        and not stripped.endswith((*_QUOTES, ".", ";", ","))


# --- titles ------------------------------------------------------------------------------------------


def _upper_title(line: TextLine, body_size: float, vocab: Vocabulary, strict: bool = True) -> bool:
    if not (line.all_bold or line.size >= 1.12 * body_size):  # (tested first: cheap, and most lines fail)
        return False
    text = line.text.strip()
    if not text or len(text) > 90 or text.endswith((":", ",")) or line.table_id:
        return False
    main, _ = split_title(text)
    letters = [c for c in main if c.isalpha()]
    if strict and len(letters) < 3:
        return False
    return not any(c.islower() for c in letters) and _key(vocab, text) is None


def _continuation(prev: TextLine, line: TextLine, body_size: float, vocab: Vocabulary) -> bool:
    if line.page != prev.page or abs(line.size - prev.size) > 0.6 or line.all_bold != prev.all_bold:
        return False
    if line.y0 - prev.y1 > 1.0 * prev.size or line.y0 < prev.y0:
        return False
    text = line.text.strip()
    if _PAREN.fullmatch(text):
        return True
    return _upper_title(line, body_size, vocab, strict=False)


def _is_heading_line(line: TextLine, vocab: Vocabulary) -> bool:
    runs = _runs(line)
    return bool(runs) and runs[0].styled and _key(vocab, runs[0].text) is not None


def _display_title(line: TextLine, body_size: float, vocab: Vocabulary) -> bool:
    """A mixed-case title ("Paracetamol (Acetaminophen)"): short, capitalised, bold or larger than body
    text, no sentence punctuation, not a heading. Only an identity line right below confirms it."""
    if not (line.all_bold or line.size >= 1.12 * body_size):  # (tested first: cheap, and most lines fail)
        return False
    text = line.text.strip()
    if not text or len(text) > 60 or line.table_id or text.endswith((".", ":", ";", ",", "!", "?")):
        return False
    main, _ = split_title(text)
    if not main[:1].isupper() or len(main.split()) > 5 or any(c.isdigit() for c in main):
        return False
    return _key(vocab, text) is None and not _BULLET.match(text)


def _alias_line(prev: TextLine, line: TextLine) -> bool:
    """A parenthetical line right below a title ("(Acetaminophen)"), in any style."""
    return (line.page == prev.page and bool(_PAREN.fullmatch(line.text.strip())) and line.y0 >= prev.y0
            and line.y0 - prev.y1 <= 1.5 * max(prev.size, line.size) and not line.table_id)


@dataclass
class SegmentNotes:
    """What segmentation saw, per physical page, for diagnostics: title candidates with their verdict,
    and the section headings recognised (or ignored as repeated)."""

    titles: dict[int, list[str]] = field(default_factory=dict)
    headings: dict[int, list[str]] = field(default_factory=dict)

    def title(self, page: int, text: str, verdict: str) -> None:
        self.titles.setdefault(page, []).append(f"{text!r}: {verdict}")

    def heading(self, page: int, printed: str, verdict: str) -> None:
        self.headings.setdefault(page, []).append(f"{printed!r}: {verdict}")


@dataclass
class _Title:
    start: int
    end: int
    text: str
    by_identity: bool  # confirmed by an identity line (not only by a heading below a large title)


def _title_candidates(ctx: _Ctx, vocab: Vocabulary, notes: SegmentNotes | None) -> list[_Title]:
    lines = ctx.lines
    found: list[_Title] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        upper = _upper_title(line, ctx.body_size, vocab)
        if not upper and not _display_title(line, ctx.body_size, vocab):
            i += 1
            continue
        end = i + 1
        parts = [line.text.strip()]
        while upper and end < len(lines) and end - i < 3 and _continuation(lines[end - 1], lines[end],
                                                                           ctx.body_size, vocab):
            parts.append(lines[end].text.strip())
            end += 1
        if end < len(lines) and not _PAREN.search(" ".join(parts)) \
                and _alias_line(lines[end - 1], lines[end]):
            parts.append(lines[end].text.strip())
            end += 1
        confirmed = by_identity = False
        large = upper and line.size >= 1.12 * ctx.body_size
        for j in range(end, min(len(lines), end + (_CONFIRM_WITHIN if upper else 1))):
            if _identity_split(lines[j], vocab, zone=False) is not None:
                confirmed = by_identity = True
                break
            if large and _is_heading_line(lines[j], vocab):
                confirmed = True
                break
            if _upper_title(lines[j], ctx.body_size, vocab):
                break
        text = " ".join(" ".join(parts).split())
        if confirmed:
            found.append(_Title(i, end, text, by_identity))
            i = end
        else:
            if notes is not None:
                notes.title(line.page, text, "not a title: no identity line (or heading) right below")
            i += 1
    return found


def _page_top(ctx: _Ctx, index: int) -> bool:
    """The line is among the first two of its page in reading order (where a running header would be)."""
    page = ctx.lines[index].page
    return all(ctx.lines[k].page != page for k in range(max(0, index - 2), index))


def running_names(ctx: _Ctx, found: list[_Title], notes: SegmentNotes | None = None
                  ) -> tuple[list[_Title], set[int]]:
    """Titles sharing a drug_id: the one confirmed by an identity line (else the first) is the monograph;
    the others at the top of a page are running-header names left in the text, and their lines are
    dropped. Returns (titles kept, indexes of the lines dropped)."""
    by_drug: dict[str, list[_Title]] = {}
    for title in found:
        by_drug.setdefault(drug_id_for(title.text), []).append(title)
    dropped: set[int] = set()
    demoted: set[int] = set()
    for titles in by_drug.values():
        if len(titles) < 2:
            continue
        best = max(titles, key=lambda t: (t.by_identity, not _page_top(ctx, t.start), -t.start))
        for title in titles:
            if title is not best and _page_top(ctx, title.start):
                demoted.add(title.start)
                dropped.update(range(title.start, title.end))
    kept: list[_Title] = []
    for title in found:
        page = ctx.lines[title.start].page
        if title.start in demoted:
            if notes is not None:
                notes.title(page, title.text, "running-header name left in the text (same drug as a title "
                                              "confirmed elsewhere): dropped, starts no monograph")
            continue
        if notes is not None:
            notes.title(page, title.text, "monograph title" + (" (identity line below)" if title.by_identity
                                                               else " (heading below)"))
        kept.append(title)
    return kept, dropped


def _terminator(line: TextLine, body_size: float, vocab: Vocabulary) -> bool:
    if line.size < 1.25 * body_size:  # (tested first: cheap, and most lines fail)
        return False
    text = line.text.strip()
    letters = [c for c in text if c.isalpha()]
    return (len(letters) >= 3 and not any(c.islower() for c in letters)
            and line.size >= 1.25 * body_size and _key(vocab, text) is None)


# --- monographs --------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, monograph: Monograph, tables: dict[str, TableRegion], identity: set[str],
                 notes: SegmentNotes | None = None) -> None:
        self.m = monograph
        self.notes = notes
        self.identity = identity
        self.tables = tables
        self.current: Section | None = None
        self.fresh = False  # next text piece starts the section
        self.line: TextLine | None = None  # the line the last text piece came from ...
        self.cursor = 0  # ... and where in its text that piece ended
        self.identity_zone = all(s.key in identity for s in monograph.sections)  # only identity sections yet

    def heading(self, key: str, printed: str, page: int) -> bool:
        if self.notes is not None:
            verdict = "repeated: kept as text" if self.m.section(key) is not None else f"section {key}"
            self.notes.heading(page, printed, verdict)
        if self.m.section(key) is not None:
            self.m.ignored_headings.append(printed)
            return False
        self.current = Section(key=key, heading=printed, page=page)
        self.m.sections.append(self.current)
        self.identity_zone = self.identity_zone and key in self.identity
        self.fresh = True
        return True

    def text(self, text: str, line: TextLine, para: bool) -> None:
        if line is not self.line:
            self.line, self.cursor = line, 0
        box, self.cursor = part_box(line, text, self.cursor)
        piece = Piece(text=text, page=line.page, para_start=para or self.fresh, visual=line.visual, bbox=box)
        self.fresh = False
        if self.current is None:
            self.m.unassigned.append(piece)
        else:
            self.current.pieces.append(piece)

    def table(self, line: TextLine) -> None:
        region = self.tables.get(line.table_id)
        target = self.current
        rows = region.rows if region else []
        if target is None:
            self.m.unassigned.append(Piece(line.text, line.page, True, True, bbox=line.bbox))
            return
        table_id = f"t{len(target.tables) + 1}"
        target.tables.append(LiftedTable(table_id=table_id, page=line.page, rows=rows,
                                         bbox=region.bbox if region else line.bbox))
        target.pieces.append(Piece(line.text, line.page, True, True, table_id, bbox=line.bbox))
        self.fresh = False


def part_box(line: TextLine, text: str, cursor: int = 0) -> tuple[BBox, int]:
    """The box of `text`, a part of the line's text found at or after `cursor` (a heading run into the
    line leaves the rest of it to a piece): the union of the boxes of the spans it overlaps, else the
    line's box; and where the part ends in the line's text."""
    whole = line.text
    at = whole.find(text, cursor) if text else -1
    if at < 0:
        return line.bbox, cursor
    end = at + len(text)
    if (at == 0 and end >= len(whole.rstrip())) or len(line.spans) < 2:
        return line.bbox, end
    x0 = y0 = float("inf")
    x1 = y1 = float("-inf")
    pos = 0
    for span in line.spans:
        stop = pos + len(span.text)
        if stop > at and pos < end and span.text.strip():
            x0, y0 = min(x0, span.bbox[0]), min(y0, span.bbox[1])
            x1, y1 = max(x1, span.bbox[2]), max(y1, span.bbox[3])
        pos = stop
    if x1 <= x0 or y1 <= y0:
        return line.bbox, end
    return (x0, y0, x1, y1), end


def segment(doc: ParsedDocument, vocab: Vocabulary, notes: SegmentNotes | None = None) -> list[Monograph]:
    """Monographs with their sections, in reading order (`notes` collects what was seen, for diagnostics)."""
    ctx = _context(doc, vocab)
    tables = {tid: t for page in doc.pages for tid, t in page.tables.items()}
    kept, dropped = running_names(ctx, _title_candidates(ctx, vocab, notes), notes)
    titles = [(t.start, t.end, t.text) for t in kept]
    monographs: list[Monograph] = []
    for n, (start, end, title) in enumerate(titles):
        stop = titles[n + 1][0] if n + 1 < len(titles) else len(ctx.lines)
        main, aliases = split_title(title)
        mono = Monograph(drug_id=slugify(main), title=title, drug_name=title, aliases=aliases,
                         page=ctx.lines[start].page)
        builder = _Builder(mono, tables, set(vocab.identity_sections), notes)
        i = end
        while i < stop:
            line = ctx.lines[i]
            if i in dropped:
                i += 1
                continue
            if _terminator(line, ctx.body_size, vocab):
                mono.ended_by = f"{line.text.strip()} (page {line.page})"
                break
            if line.table_id:
                builder.table(line)
                i += 1
                continue
            consumed = _joined_heading(ctx, i, stop, vocab)
            if consumed:
                text = " ".join(ctx.lines[k].text.strip() for k in range(i, i + consumed))
                key = _key(vocab, text)
                if key is not None and builder.heading(key, text, line.page):
                    i += consumed
                    continue
            for kind, key, value in _split_line(line, vocab, builder.identity_zone, ctx.block_start[i]):
                if kind == "heading" and builder.heading(key, value, line.page):
                    continue
                builder.text(value, line, ctx.para[i])
            i += 1
        monographs.append(mono)
    return monographs


def rejoin_split_headings(lines: list[TextLine], vocab: Vocabulary) -> list[TextLine]:
    """A run-in styled heading broken over two lines ("… **Dạng thuốc và** / **hàm lượng** Viên …") is moved
    whole onto the second line, so it can be recognised there."""
    out = list(lines)
    for i in range(len(out) - 1):
        a, b = out[i], out[i + 1]
        if a.table_id or b.table_id or not a.spans or not b.spans:
            continue
        runs_a, runs_b = _runs(a), _runs(b)
        if len(runs_a) < 2 or not (runs_a[-1].styled and runs_b[0].styled):
            continue
        tail, head = runs_a[-1].text.strip(), runs_b[0].text.strip()
        if not tail or not head or _key(vocab, tail) is not None:
            continue
        if _key(vocab, f"{tail} {head}") is None:
            continue
        cut = runs_a[-1].start
        keep: list[Span] = []
        move: list[Span] = []
        pos = 0
        for span in a.spans:
            (keep if pos < cut else move).append(span)
            pos += len(span.text)
        joined = [*move, Span(" ", size=move[-1].size, bold=move[-1].bold, italic=move[-1].italic,
                              bbox=move[-1].bbox, baseline=move[-1].baseline), *b.spans]
        out[i] = TextLine(spans=keep, page=a.page, bbox=a.bbox, column=a.column, visual=a.visual)
        out[i + 1] = TextLine(spans=joined, page=b.page, bbox=b.bbox, column=b.column, visual=b.visual)
    return out


def _joined_heading(ctx: _Ctx, i: int, stop: int, vocab: Vocabulary) -> int:
    """Number of lines (2 or 3) of a styled heading wrapped over lines, or 0. The longest join wins, so
    "TÁC DỤNG KHÔNG MONG MUỐN" / "(ADR)" is one heading even though its first line is one too."""
    first = ctx.lines[i]
    if not (first.all_bold or first.all_italic):
        return 0
    parts = [first.text.strip()]
    best = 0
    for k in range(i + 1, min(stop, i + 3)):
        nxt = ctx.lines[k]
        if not (nxt.all_bold or nxt.all_italic) or nxt.table_id or nxt.page != first.page:
            break
        parts.append(nxt.text.strip())
        if _key(vocab, " ".join(parts)) is not None:
            best = k - i + 1
    return best
