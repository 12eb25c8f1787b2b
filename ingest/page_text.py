"""One PDF page's text as styled line pieces (and, when asked, its words with their boxes).

Per page, one `page.get_text("rawdict")` call: characters with their boxes, so word gaps that MuPDF leaves
without a space are found (`chars_text`), or `get_text("dict")` when no such gap can exist (below). Bold is
the font's flag or name, or text drawn filled and stroked (synthetic bold). MuPDF reports that last only
with its style collection, which costs about ten times the rest of the extraction; so the page's content
stream is scanned first (`ingest.render_modes`) and, when it shows the fonts drawn that way and nothing else
the style collection would change, the text is read without it and a span's font says whether it is
stroked. Otherwise, or when a span's font is not one the scan knows, or when two pieces with the same text
overlap (text printed twice), the page is read with MuPDF's style collection, as before. Both ways give the
same pieces (a test compares them page by page). When the scan also finds the page's text gapless (every
character placed where the previous one ends, so no span hides a word gap) and the words are not asked for,
the spans' text is read without character boxes (`get_text("dict")`), which gives the same pieces again for
a third of the cost.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from operator import itemgetter, sub
from typing import Any

import pymupdf

from ingest.layout import BBox, Span, TextLine
from ingest.render_modes import fill_stroke_fonts
from ingest.tables import Token
from rag_server.text.normalize import nfc

STYLED_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP | pymupdf.TEXT_COLLECT_STYLES
PLAIN_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
_FILL_AND_STROKE = 16 | 32  # char_flags of text both filled and stroked: synthetic ("fake") bold
_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demibold", ",bd")
_ITALIC_NAMES = ("italic", "oblique", ",it")
_DROP = dict.fromkeys(map(ord, "\u00ad\u200b\ufeff"), None)
_BOLD_FLAG, _ITALIC_FLAG = pymupdf.TEXT_FONT_BOLD, pymupdf.TEXT_FONT_ITALIC
WORD_GAP = 0.15  # x font size: a horizontal gap this wide between two characters separates words

Stroked = Callable[[str], "bool | None"]  # span font -> filled and stroked (None: unknown, read with styles)


class _Unknown(Exception):
    """A span's font is not one the content scan knows: the page is read again with styles."""


_CHAR, _BBOX, _ORIGIN = itemgetter("c"), itemgetter("bbox"), itemgetter("origin")
_X0, _Y0, _X1, _Y1 = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(3)


def _cuts(chars: list[dict[str, Any]], texts: list[str], size: float) -> list[int]:
    """Indexes of the characters before which a word gap has no space: the character and the one before
    it are not spaces, and it starts more than WORD_GAP x size after the previous one ends."""
    gap = WORD_GAP * size
    # C-level passes over the characters; the Python test runs on the (few) wide gaps only
    ends = list(map(_X1, map(_BBOX, chars)))
    starts = list(map(_X0, map(_ORIGIN, chars)))
    wide = [i for i, width in enumerate(map(sub, starts[1:], ends), 1) if width > gap]
    return [i for i in wide if not texts[i].isspace() and not texts[i - 1].isspace()]


def _with_spaces(texts: list[str], cuts: list[int]) -> str:
    if not cuts:
        return "".join(texts)
    parts: list[str] = []
    start = 0
    for cut in cuts:
        parts.append("".join(texts[start:cut]))
        start = cut
    parts.append("".join(texts[start:]))
    return " ".join(parts)


def chars_text(chars: list[dict[str, Any]], size: float) -> str:
    """A span's text from its characters, with a space wherever the next character starts a word-gap
    after the previous one ends. MuPDF does not always insert one itself: after a letter with a
    diacritic ("Chỉ", "chế", "hạ") it glues separately positioned words ("Chỉđịnh"), as a PDF whose
    words are placed one by one without space glyphs (justified text, many typesetters) shows."""
    texts = list(map(_CHAR, chars))
    return _with_spaces(texts, _cuts(chars, texts, size))


_RUN = re.compile(r"\S+")


def chars_text_words(chars: list[dict[str, Any]], size: float) -> tuple[str, list[Token]]:
    """`chars_text` and the words of the span with their boxes (split where it puts or finds a space)."""
    texts = list(map(_CHAR, chars))
    cuts = _cuts(chars, texts, size)
    joined = "".join(texts)
    if len(joined) != len(texts):  # a character that is not one code point: index by character
        return _with_spaces(texts, cuts), _words_slow(chars, texts, cuts, size)
    boxes = list(map(_BBOX, chars))
    words: list[Token] = []
    at = 0
    for run in _RUN.finditer(joined):
        start, end = run.span()
        while at < len(cuts) and cuts[at] <= start:
            at += 1
        while True:
            stop = cuts[at] if at < len(cuts) and cuts[at] < end else end
            box = boxes[start:stop]
            words.append(Token(nfc(joined[start:stop]),
                               (box[0][0], min(map(_Y0, box)), max(map(_X1, box)), max(map(_Y1, box))), size))
            if stop == end:
                break
            start = stop
            at += 1
    return _with_spaces(texts, cuts), words


def _words_slow(chars: list[dict[str, Any]], texts: list[str], cuts: list[int], size: float) -> list[Token]:
    """The words, character by character (for characters that are not one code point each)."""
    words: list[Token] = []
    word: list[int] = []
    cut_at = set(cuts)

    def close() -> None:
        box = [chars[i]["bbox"] for i in word]
        words.append(Token(nfc("".join(texts[i] for i in word)),
                           (box[0][0], min(map(_Y0, box)), max(map(_X1, box)), max(map(_Y1, box))), size))
        word.clear()

    for i, text in enumerate(texts):
        if word and (i in cut_at or text.isspace()):
            close()
        if not text.isspace():
            word.append(i)
    if word:
        close()
    return words


_FONT_STYLE: dict[str, tuple[bool, bool]] = {}


def _font_style(font: str) -> tuple[bool, bool]:
    """(bold, italic) by the font's name."""
    style = _FONT_STYLE.get(font)
    if style is None:
        lower = font.lower()
        style = (any(n in lower for n in _BOLD_NAMES), any(n in lower for n in _ITALIC_NAMES))
        _FONT_STYLE[font] = style
    return style


def _span(raw: dict[str, Any], words: list[Token] | None, stroked_font: Stroked | None) -> Span | None:
    """A span of a `rawdict` line; its words (with boxes) are added to `words` when it is given. Whether
    it is filled and stroked comes from its char_flags, or from `stroked_font` (text read without styles)."""
    chars = raw.get("chars")
    size = float(raw.get("size", 0.0))
    if chars is None:
        source = str(raw.get("text", ""))
    elif words is None:
        source = chars_text(chars, max(size, 1.0))
    else:
        source, found = chars_text_words(chars, max(size, 1.0))
        words.extend(found)
    text = nfc(source)
    if "\u00ad" in text or "\u200b" in text or "\ufeff" in text:  # cheaper than translating every span
        text = text.translate(_DROP)
    if not text:
        return None
    font = str(raw.get("font", ""))
    named_bold, named_italic = _font_style(font)
    flags = int(raw.get("flags", 0))
    if stroked_font is None:
        stroked = int(raw.get("char_flags", 0)) & _FILL_AND_STROKE == _FILL_AND_STROKE
    else:
        known = stroked_font(font)
        if known is None:
            raise _Unknown(font)
        stroked = known
    bold = bool(flags & _BOLD_FLAG) or named_bold or stroked
    italic = bool(flags & _ITALIC_FLAG) or named_italic
    box = raw["bbox"]
    bbox = (float(box[0]), float(box[1]), float(box[2]), float(box[3]))
    origin = raw.get("origin")
    baseline = bbox[3] if origin is None else float(origin[1])
    return Span(text, font, round(size, 2), bold, italic, bbox, baseline)


def _same_style(a: Span, b: Span) -> bool:
    return a.bold == b.bold and a.italic == b.italic and abs(a.size - b.size) < 0.3


def _merge_spans(spans: list[Span]) -> list[Span]:
    """Adjacent spans of one style become one; a span printed twice at the same place (fake bold) once."""
    out: list[Span] = []
    for span in spans:
        if out:
            prev = out[-1]
            if span.text == prev.text and abs(span.bbox[0] - prev.bbox[0]) < 1.0 \
                    and abs(span.bbox[1] - prev.bbox[1]) < 1.0:
                out[-1] = Span(prev.text, prev.font, prev.size, True, prev.italic, prev.bbox, prev.baseline)
                continue
            if _same_style(prev, span) and abs(span.baseline - prev.baseline) < 0.2 * prev.size:
                bbox = (min(prev.bbox[0], span.bbox[0]), min(prev.bbox[1], span.bbox[1]),
                        max(prev.bbox[2], span.bbox[2]), max(prev.bbox[3], span.bbox[3]))
                apart = span.bbox[0] - prev.bbox[2] > WORD_GAP * max(prev.size, 1.0)
                glue = " " if apart and not prev.text[-1:].isspace() and not span.text[:1].isspace() else ""
                out[-1] = Span(prev.text + glue + span.text, prev.font, prev.size, prev.bold, prev.italic,
                               bbox, prev.baseline)
                continue
        out.append(span)
    return out


def _line_pieces(raw_line: dict[str, Any], page: int, words: list[Token] | None,
                 stroked_font: Stroked | None) -> list[TextLine]:
    """A PyMuPDF line as one or more TextLines (split where spans are far apart); its words are added to
    `words` when it is given."""
    direction = raw_line.get("dir", (1.0, 0.0))
    if abs(float(direction[1])) > 0.2:  # vertical or rotated text: not body text
        return []
    spans = [s for s in (_span(r, words, stroked_font) for r in raw_line.get("spans", ())) if s is not None]
    groups: list[list[Span]] = []
    for span in spans:
        if groups and span.bbox[0] - groups[-1][-1].bbox[2] <= 1.2 * max(span.size, 1.0):
            groups[-1].append(span)
        else:
            groups.append([span])
    pieces: list[TextLine] = []
    for group in groups:
        if len(group) == 1:  # most pieces: one span, its box
            if group[0].text.strip():
                pieces.append(TextLine(spans=group, page=page, bbox=group[0].bbox))
            continue
        merged = _merge_spans(group)
        if not "".join(s.text for s in merged).strip():
            continue
        bbox: BBox = (min(s.bbox[0] for s in merged), min(s.bbox[1] for s in merged),
                      max(s.bbox[2] for s in merged), max(s.bbox[3] for s in merged))
        pieces.append(TextLine(spans=merged, page=page, bbox=bbox))
    return pieces


def _pieces(data: dict[str, Any], page: int, words: list[Token] | None,
            stroked_font: Stroked | None) -> list[TextLine]:
    lines: list[TextLine] = []
    for block in data.get("blocks", ()):
        if block.get("type", 0) != 0:
            continue
        for raw_line in block.get("lines", ()):
            lines.extend(_line_pieces(raw_line, page, words, stroked_font))
    return lines


def printed_twice(lines: list[TextLine]) -> bool:
    """Two pieces overlapping by half their height and half the narrower one's width, one's text inside the
    other's: text printed twice, which only MuPDF's style collection merges."""
    ordered = sorted(lines, key=lambda ln: ln.bbox[1])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b.bbox[1] >= a.bbox[3]:
                break
            high = min(a.bbox[3], b.bbox[3]) - b.bbox[1]
            wide = min(a.bbox[2], b.bbox[2]) - max(a.bbox[0], b.bbox[0])
            if high >= 0.5 * min(a.height, b.height) \
                    and wide >= 0.5 * min(a.bbox[2] - a.bbox[0], b.bbox[2] - b.bbox[0]):
                ta, tb = " ".join(a.text.split()), " ".join(b.text.split())
                if ta and tb and (ta in tb or tb in ta):
                    return True
    return False


def page_lines(page: pymupdf.Page, number: int, with_words: bool) -> tuple[list[TextLine], list[Token]]:
    """The page's line pieces (physical page `number`, 1-based) and, `with_words`, its words."""
    fonts = fill_stroke_fonts(page)
    if fonts is not None:
        words: list[Token] = []
        try:
            # gapless text without words: the spans' own text, no character boxes (about 3x cheaper)
            data = page.get_text("dict" if fonts.gapless and not with_words else "rawdict", flags=PLAIN_FLAGS)
            lines = _pieces(data, number, words if with_words else None, fonts.stroked)
        except _Unknown:
            lines = []
        else:
            if not printed_twice(lines):
                return lines, words
    words = []
    lines = _pieces(page.get_text("rawdict", flags=STYLED_FLAGS), number, words if with_words else None, None)
    return lines, words
