"""Which fonts a page draws filled *and* stroked (synthetic bold), read from its content stream.

MuPDF reports that text is filled and stroked only when its style collection is on, and that costs about
ten times the rest of the page's text extraction: for every character it searches the characters already
on the page for one printed at the same place (text printed twice is fake bold). Without it the characters,
lines and spans come out the same, except that

  * a character drawn filled and stroked (text render mode 2) is reported filled only, and the spans of one
    font are not split where that changes;
  * text printed twice at (nearly) the same place is kept twice instead of being merged;
  * clipping modes (4-7) and ActualText replacements are handled slightly differently.

`fill_stroke_fonts(page)` reads the content stream and returns the names of the fonts drawn in mode 2 when
the page is simple enough for that to be the only difference, and each font is drawn in one way only (so a
span's font says whether it is stroked); otherwise None, and the parser lets MuPDF collect the styles.

The same scan says whether the page's text is `gapless`: no string is moved right of where the previous one
ended by more than kerning does (a TJ number under TJ_GAP), there is no character spacing (Tc, the `"`
operator) or horizontal scaling (Tz), and no two strings shown one after the other in the same font and
size lie on one baseline. Then MuPDF places each character of a span where the previous one ends, or
nearly, so no span can hold a word gap without a space, and the parser may read the page's text without
every character's box (`ingest.page_text`). The
scan is conservative: annotations, Type3 fonts, form XObjects with text, inline images, marked ActualText,
graphics states that set a font, a literal string it cannot tokenise, clipping render modes, and the same
text shown twice in a row (fake bold by double printing) all answer None. The parser also re-reads a page
with styles when a span's font is not one the scan knows, or when two lines with the same text overlap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

_STRING = rb"\((?:[^()\\]++|\\.)*+\)"  # possessive: a run of plain bytes at once
_HEX = rb"<[0-9A-Fa-f\s]*>"
_NUMBER = rb"[+-]?(?:\d+\.?\d*|\.\d+)(?![\d.])"
_NUMBERS = rb"(?:" + _NUMBER + rb"\s+)"
_DELIM = rb"(?=[\s/\[\]()<>{}%]|$)"
# One token of interest per match. Every alternative starts at a token boundary (not inside a number), so
# the engine skips the bytes in between quickly; strings are consumed whole, so nothing inside them counts.
_TOKEN = re.compile(
    rb"(?<![0-9.])(?=[%\[(</0-9+\-.TqQBDg'\")])(?:"
    rb"(?P<comment>%[^\r\n]*)"
    rb"|(?P<array>\[(?:\s*(?:" + _STRING + rb"|" + _HEX + rb"|" + _NUMBER + rb"))*\s*\])\s*TJ" + _DELIM
    + rb"|(?P<show>(?:" + _STRING + rb"|" + _HEX + rb")\s*Tj)" + _DELIM
    + rb"|(?P<string>" + _STRING + rb"|" + _HEX + rb")"
    + rb"|(?P<font>/[^\s/\[\]()<>{}%]+\s+" + _NUMBER + rb")\s+Tf" + _DELIM
    + rb"|(?P<name>/[^\s/\[\]()<>{}%]*)"
    + rb"|(?P<mode>" + _NUMBER + rb")\s+Tr" + _DELIM
    + rb"|(?P<charspace>" + _NUMBER + rb")\s+Tc" + _DELIM
    + rb"|(?P<hscale>" + _NUMBER + rb")\s+Tz" + _DELIM
    + rb"|(?P<move>" + _NUMBERS + rb"{1,6}(?:Td|TD|Tm|TL|cm))" + _DELIM
    + rb"|(?<![^\s\[\]()<>{}/%])(?P<op>Tj|TJ|T\*|'|\"|q|Q|BT|BI|Do|gs)" + _DELIM
    + rb"|(?P<bad>[()]))",
    re.S,
)
_ARITY = {b"Td": 2, b"TD": 2, b"Tm": 6, b"TL": 1}
_NEXT_LINE = b"T*"
SAME_IN_BOTH = frozenset({0, 1, 3})  # fill, stroke, invisible: reported alike with or without styles
FILL_STROKE = 2
NEAR = 0.25  # x font size: the same text shown again this close to where it was shown is fake bold
LINE_APART = 1.0  # x font size: two strings shown this far apart across the baseline are on different lines
# (MuPDF starts a new line at 0.8)
_STRINGS = re.compile(_STRING + rb"|" + _HEX, re.S)
_NUMBERS_IN = re.compile(_NUMBER)
TJ_GAP = 100.0  # thousandths of the font size: a TJ array moving a string further right may hide a word gap
# (the parser's word gap is 0.15 of the font size; kerning moves strings by a few hundredths)

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


class _Shown(NamedTuple):
    """Text shown: its font, operand, the text line matrix it starts at (None: unreadable) and font size."""

    font: str
    operand: bytes
    line: Matrix | None
    size: float

    def origin(self) -> tuple[float, float, float] | None:
        """(x, y, scale) of the text line's start in text space scaled by the matrix; None if unreadable."""
        if self.line is None:
            return None
        a, _b, _c, d, e, f = self.line
        return e, f, max(abs(self.size * d), abs(self.size * a), 1.0)

    def near(self, other: _Shown) -> bool:
        here, there = self.origin(), other.origin()
        if here is None or there is None:
            return True  # cannot tell: treat as printed twice
        return abs(here[0] - there[0]) <= NEAR * here[2] and abs(here[1] - there[1]) <= NEAR * here[2]

    def other_line(self, other: _Shown) -> bool:
        """Shown on another baseline than `other` (so MuPDF cannot continue one span across them): both
        upright (the baseline is horizontal) and at least LINE_APART x size apart vertically."""
        here, there = self.line, other.line
        if here is None or there is None or here[1] != 0.0 or there[1] != 0.0:
            return False
        scale = max(abs(self.size * here[3]), abs(other.size * there[3]), 1.0)
        return abs(here[5] - there[5]) >= LINE_APART * scale


def _moved(line: Matrix | None, move: bytes, leading: float) -> tuple[Matrix | None, float]:
    """The text line matrix and leading after a positioning operator (Td, TD, Tm, TL or T*)."""
    if move == _NEXT_LINE:
        tx, ty = 0.0, -leading
    else:
        numbers = move.split()
        verb = numbers.pop()
        if len(numbers) != _ARITY[verb]:
            return None, leading
        if verb == b"Tm":
            a, b, c, d, e, f = map(float, numbers)
            return (a, b, c, d, e, f), leading
        if verb == b"TL":
            return line, float(numbers[0])
        tx, ty = float(numbers[0]), float(numbers[1])
        if verb == b"TD":
            leading = -ty
    if line is None:
        return None, leading
    a, b, c, d, e, f = line
    return (a, b, c, d, e + tx * a + ty * c, f + tx * b + ty * d), leading


@dataclass(frozen=True)
class PageFonts:
    """What the content scan found: the names of the fonts drawn filled and stroked, and of the others; and
    whether the page's text is gapless (see the module doc)."""

    fill_stroke: frozenset[str]
    plain: frozenset[str]
    gapless: bool = False

    def stroked(self, span_font: str) -> bool | None:
        """Whether a span in this font is filled and stroked; None when the name is not the page's (PyMuPDF
        cuts long font names short, so a span's name may be the start of a font's) or could be either."""
        if span_font in self.fill_stroke or span_font in self.plain:
            return span_font in self.fill_stroke
        names = self.fill_stroke | self.plain
        hits = {name in self.fill_stroke for name in names if name.startswith(span_font)}
        return hits.pop() if len(hits) == 1 else None


def span_font_name(basefont: str) -> str:
    """A font's name as PyMuPDF reports it in spans: without the subset tag ("ABCDEF+")."""
    return basefont.split("+", 1)[1] if "+" in basefont else basefont


@dataclass
class StreamModes:
    """Font resource name -> the text render modes it is shown in; whether the stream paints an XObject
    (`Do`) or sets a graphics state (`gs`), whose resources the caller checks; whether its text is gapless."""

    modes: dict[str, set[int]]
    paints_xobject: bool = False
    sets_state: bool = False
    gapless: bool = True  # no span can hold a word gap without a space (see the module doc)


def scan_modes(content: bytes) -> StreamModes | None:
    """The render modes of a content stream's text, font by font; None when the stream holds something the
    scan does not follow (see the module doc)."""
    if b"/ActualText" in content:
        return None
    out = StreamModes({})
    font, mode, size, leading = "", 0, 0.0, 0.0
    stack: list[tuple[str, int, float, float]] = []
    line: Matrix | None = _IDENTITY  # the text line matrix
    moved = False  # the coordinate system changed (cm, Q) since the last text shown
    transformed = False  # a `cm` was seen: after a Q, baselines of text objects are not comparable
    last: _Shown | None = None
    pending: bytes | None = None
    fonts: dict[bytes, tuple[str, float]] = {}  # a `/F1 9.5` operand read once
    # findall: one tuple of the groups per token, made in C (a third of the time of match objects)
    for comment, array, show, string, font_set, name, mode_set, charspace, hscale, move, op, bad \
            in _TOKEN.findall(content):
        if string:
            pending = string
            continue
        if comment or name:
            continue
        if bad:
            return None
        if show or array or op == b"Tj" or op == b"'" or op == b'"':
            shown = show or array or pending
            if shown is None:
                return None  # an operand the scan did not read
            if op and op != b"Tj":  # ' and " move to the next line first
                line, leading = _moved(line, _NEXT_LINE, leading)
            now = _Shown(font, shown, line, size)
            if last is not None and last.font == font and last.operand == shown and (moved or now.near(last)):
                return None  # the same text shown again where it was: fake bold by printing twice
            if op == b'"' or (array and _spread(array)):
                out.gapless = False  # character spacing, or strings moved apart by more than kerning
            elif last is not None and last.font == font and last.size == size \
                    and ((moved and transformed) or not now.other_line(last)):
                out.gapless = False  # one span may continue across the two strings
            last, moved = now, False
            out.modes.setdefault(font, set()).add(mode)
        elif font_set:
            known = fonts.get(font_set)
            if known is None:
                resource, points = font_set.split()
                known = fonts[font_set] = (resource[1:].decode("latin-1"), float(points))
            font, size = known
        elif mode_set:
            mode = int(float(mode_set))
        elif charspace:
            if float(charspace) != 0.0:
                out.gapless = False
        elif hscale:
            if float(hscale) != 100.0:
                out.gapless = False  # horizontal scaling: TJ moves are scaled too
        elif move:
            if move.endswith(b"cm"):
                moved = transformed = True
                m = [float(x) for x in move.split()[:-1]]
                if len(m) != 6 or m[1] != 0.0 or m[2] != 0.0 or abs(m[0]) != abs(m[3]):
                    out.gapless = False  # rotated or stretched: baselines and sizes not compared here
            else:
                line, leading = _moved(line, move, leading)
        elif op == b"T*":
            line, leading = _moved(line, _NEXT_LINE, leading)
        elif op == b"BT":
            line = _IDENTITY
        elif op == b"q":
            stack.append((font, mode, size, leading))
        elif op == b"Q":
            if stack:
                font, mode, size, leading = stack.pop()
            moved = True
        elif op == b"TJ" or op == b"BI":
            return None  # an array the scan did not read; an inline image (binary data)
        elif op == b"Do":
            out.paints_xobject = True
        else:
            out.sets_state = True
        pending = None
    return out


def _spread(array: bytes) -> bool:
    """A TJ array moves one of its strings right of where the previous one ended by more than TJ_GAP (the
    numbers between two strings, summed: negative numbers move right)."""
    return any(sum(map(float, _NUMBERS_IN.findall(between))) < -TJ_GAP for between in _STRINGS.split(array))


def fill_stroke_fonts(page: Any) -> PageFonts | None:
    """The fonts a PyMuPDF page draws filled and stroked, when its content scan says that is all the style
    collection would add (see the module doc); else None."""
    if page.first_annot is not None or page.first_widget is not None:
        return None
    doc = page.parent
    scanned = scan_modes(b"\n".join(doc.xref_stream(xref) or b"" for xref in page.get_contents()))
    if scanned is None:
        return None
    if scanned.paints_xobject and any(b"BT" in (doc.xref_stream(x[0]) or b"") for x in page.get_xobjects()):
        return None
    if scanned.sets_state and _state_sets_font(doc, page.xref):
        return None
    names: dict[str, str] = {}
    for _xref, _ext, kind, basefont, resource, *_ in page.get_fonts(full=True):
        if kind == "Type3" or (resource in names and names[resource] != span_font_name(basefont)):
            return None
        names[resource] = span_font_name(basefont)
    by_name: dict[str, set[int]] = {}
    for resource, modes in scanned.modes.items():
        if resource not in names or not modes <= SAME_IN_BOTH | {FILL_STROKE}:
            return None
        by_name.setdefault(names[resource], set()).update(modes)
    if any(FILL_STROKE in modes and len(modes) > 1 for modes in by_name.values()):
        return None  # one font both filled and stroked and not: only the style collection can tell spans
    stroked = frozenset(n for n, m in by_name.items() if FILL_STROKE in m)
    return PageFonts(stroked, frozenset(names.values()) - stroked, scanned.gapless)


def _state_sets_font(doc: Any, page_xref: int) -> bool:
    """A graphics state (ExtGState) among the page's resources that sets a font (`/Font`): the scan would
    not see that font change."""
    if doc.xref_get_key(page_xref, "Resources")[0] == "null":
        return True  # resources inherited from the page tree: not followed
    kind, value = doc.xref_get_key(page_xref, "Resources/ExtGState")
    if kind == "null":
        return False
    text = value
    if kind == "xref":
        text = doc.xref_object(int(value.split()[0]), compressed=True)
    for ref in re.findall(r"(\d+) 0 R", text):
        if "/Font" in doc.xref_object(int(ref), compressed=True):
            return True
    return "/Font" in text
