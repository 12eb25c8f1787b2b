"""Segment: lines in reading order -> monographs -> sections (pure; headings mapped only by the vocabulary).

Monograph title: a standalone line, bold or larger than body text, whose letters outside parentheses are all
upper case ("AMLODIPIN", "ACID ACETYLSALICYLIC", "PARACETAMOL (Acetaminophen)"), that is not itself a section
heading and is followed within 3 lines by an identity line (Tên chung quốc tế / Mã ATC / Loại thuốc) or, when
the title is larger than body text, by a section heading. A title may wrap onto a second line of its style.
  drug_id = slug of the title without its parenthetical parts
  ("PARACETAMOL (Acetaminophen)" -> "paracetamol");
  drug_name = the title as printed; the parenthetical parts are kept as aliases.
A much larger upper-case line that is not a title (a chapter or appendix heading) ends the current monograph
(recorded in `Monograph.ended_by`).

Section headings, all through `Vocabulary.heading_key()` (never special-cased here):
  * identity lines "Label: value" (label bold or plain, misspelt variants in the vocabulary, value on the
    same line or the next),
  * a bold or italic run mapping to a key, at the start of a line or after the end of a sentence, and not
    followed by lower-case text (run-in headings: "**Loại thuốc**: Chống co giật. **Dạng thuốc và hàm
    lượng** Nang ..."); a bold heading wrapped onto two lines is joined first,
  * a whole plain line mapping to a key when it starts a block (after a gap, or after a finished sentence):
    "Dược động học" as a plain line inside "Dược lý và cơ chế tác dụng".
A heading whose key the monograph already has stays body text (kept in `ignored_headings`). Unknown bold
lines ("Người lớn:") are body text. Table markers from parse become pieces that refer to lifted tables.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from ingest.layout import ParsedDocument, Span, TableRegion, TextLine
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


@dataclass
class Piece:
    text: str
    page: int
    para_start: bool = False
    visual: bool = False
    table_id: str = ""  # monograph-level table id when this piece is a table marker


@dataclass
class LiftedTable:
    table_id: str
    page: int
    rows: list[list[str]]


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


def _key(vocab: Vocabulary, text: str) -> str | None:
    """Section key of a printed heading; a numbered heading ("3. CHỈ ĐỊNH", "IV) Thận trọng") is looked up
    without its number."""
    key = vocab.heading_key(text)
    if key is None:
        m = _ENUM.match(text)
        if m:
            key = vocab.heading_key(text[m.end():])
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


def _context(doc: ParsedDocument, vocab: Vocabulary) -> _Ctx:
    lines = rejoin_split_headings([ln for page in doc.pages for ln in page.lines], vocab)
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
        ended = prev is None or prev.text.rstrip().endswith(_TERMINAL) or bool(prev.table_id)
        same = prev_same[i]
        gap_break = same is not None and (ln.y0 - same.y1) > typical + 0.3 * size
        short_prev = prev is not None and ended and \
            prev.x1 < col_right.get((prev.page, prev.column), prev.x1) - 2.5 * size
        bullet = bool(_BULLET.match(ln.text))
        finished = prev is None or prev.text.rstrip().endswith(_SENTENCE_END) or bool(prev.table_id)
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
    text = line.text.strip()
    if not text or len(text) > 90 or text.endswith((":", ",")) or line.table_id:
        return False
    main, _ = split_title(text)
    letters = [c for c in main if c.isalpha()]
    if strict and len(letters) < 3:
        return False
    if any(c.islower() for c in letters) or _key(vocab, text) is not None:
        return False
    return line.all_bold or line.size >= 1.12 * body_size


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
    text = line.text.strip()
    if not text or len(text) > 60 or line.table_id or text.endswith((".", ":", ";", ",", "!", "?")):
        return False
    main, _ = split_title(text)
    if not main[:1].isupper() or len(main.split()) > 5 or any(c.isdigit() for c in main):
        return False
    if _key(vocab, text) is not None or _BULLET.match(text):
        return False
    return line.all_bold or line.size >= 1.12 * body_size


def _alias_line(prev: TextLine, line: TextLine) -> bool:
    """A parenthetical line right below a title ("(Acetaminophen)"), in any style."""
    return (line.page == prev.page and bool(_PAREN.fullmatch(line.text.strip())) and line.y0 >= prev.y0
            and line.y0 - prev.y1 <= 1.5 * max(prev.size, line.size) and not line.table_id)


def find_titles(ctx: _Ctx, vocab: Vocabulary) -> list[tuple[int, int, str]]:
    """(first line, line after the title, title text) of every monograph title, in reading order."""
    lines = ctx.lines
    found: list[tuple[int, int, str]] = []
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
        confirmed = False
        large = upper and line.size >= 1.12 * ctx.body_size
        for j in range(end, min(len(lines), end + (_CONFIRM_WITHIN if upper else 1))):
            if _identity_split(lines[j], vocab, zone=False) is not None:
                confirmed = True
                break
            if large and _is_heading_line(lines[j], vocab):
                confirmed = True
                break
            if _upper_title(lines[j], ctx.body_size, vocab):
                break
        if confirmed:
            found.append((i, end, " ".join(" ".join(parts).split())))
            i = end
        else:
            i += 1
    return found


def _terminator(line: TextLine, body_size: float, vocab: Vocabulary) -> bool:
    text = line.text.strip()
    letters = [c for c in text if c.isalpha()]
    return (len(letters) >= 3 and not any(c.islower() for c in letters)
            and line.size >= 1.25 * body_size and _key(vocab, text) is None)


# --- monographs --------------------------------------------------------------------------------------


class _Builder:
    def __init__(self, monograph: Monograph, tables: dict[str, TableRegion], identity: set[str]) -> None:
        self.m = monograph
        self.identity = identity
        self.tables = tables
        self.current: Section | None = None
        self.fresh = False  # next text piece starts the section

    @property
    def identity_zone(self) -> bool:
        return all(s.key in self.identity for s in self.m.sections)

    def heading(self, key: str, printed: str, page: int) -> bool:
        if self.m.section(key) is not None:
            self.m.ignored_headings.append(printed)
            return False
        self.current = Section(key=key, heading=printed, page=page)
        self.m.sections.append(self.current)
        self.fresh = True
        return True

    def text(self, text: str, line: TextLine, para: bool) -> None:
        piece = Piece(text=text, page=line.page, para_start=para or self.fresh, visual=line.visual)
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
            self.m.unassigned.append(Piece(line.text, line.page, True, True))
            return
        table_id = f"t{len(target.tables) + 1}"
        target.tables.append(LiftedTable(table_id=table_id, page=line.page, rows=rows))
        target.pieces.append(Piece(line.text, line.page, True, True, table_id))
        self.fresh = False


def segment(doc: ParsedDocument, vocab: Vocabulary) -> list[Monograph]:
    """Monographs with their sections, in reading order."""
    ctx = _context(doc, vocab)
    tables = {tid: t for page in doc.pages for tid, t in page.tables.items()}
    titles = find_titles(ctx, vocab)
    monographs: list[Monograph] = []
    for n, (start, end, title) in enumerate(titles):
        stop = titles[n + 1][0] if n + 1 < len(titles) else len(ctx.lines)
        main, aliases = split_title(title)
        mono = Monograph(drug_id=slugify(main), title=title, drug_name=title, aliases=aliases,
                         page=ctx.lines[start].page)
        builder = _Builder(mono, tables, set(vocab.identity_sections))
        i = end
        while i < stop:
            line = ctx.lines[i]
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
