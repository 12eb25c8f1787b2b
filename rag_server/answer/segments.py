"""Sentences and list items of a chunk's text, with their spans: what an extractive claim is made of and
where a claim's support is highlighted.

A segment ends at a sentence end (". ", "? ", "! " before a capital, a digit or a bullet), at a line
break, or at "; " between the items of a list (a sentence with two or more; a lone semicolon joins two
clauses of one thought, which stay together); a decimal comma or point ("2,5 mg", "1.000") never ends
one. Bullets and list numbers stay out of the segment's text ("- Suy thận nặng." -> "Suy thận nặng.").
A sentence or line that begins with its subject ("Người lớn: 500 mg mỗi 8 giờ; nhiễm khuẩn nặng: 1 g") is
never split at its semicolons: each part would lose the subject it is about, so the item stays whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_server.text.match import word_forms

_BREAK = re.compile(
    r"(?<=[.!?…])\s+(?=[\"“(\[]?[A-ZÀ-Ỹ0-9•\-–])"  # a sentence end before a capital, digit or bullet
    r"|\s*\n\s*"  # a line break
    r"|(?<=;)\s+"  # list items separated by semicolons
)
_LEAD = re.compile(r"^(?:[-–•·*+]|\(?\d{1,2}[.)]|[a-zđ][.)])\s+")
_SUBJECT = re.compile(r"^(?:[-–•·*+]\s+)?[^\W\d][^:;.!?\n]{0,48}:\s")  # "Người lớn: ", "Trẻ em từ 6 tuổi: "


@dataclass(frozen=True)
class Segment:
    text: str
    start: int
    end: int

    def words(self) -> set[str]:
        """Folded words of the segment (punctuation dropped)."""
        return {folded for raw, folded in word_forms(self.text) if any(c.isalnum() for c in raw)}


_MARKER = re.compile(r"^(?:\(?\d{1,2}[.)]|[a-zđ][.)])$")  # a list number standing alone ("1.", "b)")


def _semicolon(text: str, m: re.Match[str]) -> bool:
    return m.group().strip() == "" and text[m.start() - 1:m.start()] == ";"


def _breaks(text: str) -> list[re.Match[str]]:
    """The breaks of `text`, without a lone semicolon: one ";" in a sentence joins two clauses of one
    thought ("Chưa rõ thuốc có vào sữa mẹ hay không; không khuyến cáo dùng."), which stay one segment;
    two or more make a list, whose items are segments of their own."""
    found = list(_BREAK.finditer(text))
    out: list[re.Match[str]] = []
    run: list[re.Match[str]] = []  # the semicolon breaks of the current sentence
    for m in found:
        if _semicolon(text, m):
            run.append(m)
            continue
        out.extend(run if len(run) > 1 else [])
        run = []
        out.append(m)
    out.extend(run if len(run) > 1 else [])
    return sorted(out, key=lambda m: m.start())


def _pieces(text: str) -> list[tuple[int, int]]:
    """(start, end) between breaks; a list number alone joins the piece after it, and the parts after a
    semicolon join a piece that begins with its subject ("Người lớn: ...; ...")."""
    spans: list[tuple[int, int]] = []
    pos = 0
    joined = False  # the current piece began with a subject: its semicolons do not split it
    for m in [*_breaks(text), None]:
        end = m.start() if m is not None else len(text)
        if spans and (_MARKER.match(text[spans[-1][0]:spans[-1][1]].strip()) or joined):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((pos, end))
            joined = False
        piece = text[spans[-1][0]:spans[-1][1]].strip()
        joined = bool(m is not None and _semicolon(text, m) and (joined or _SUBJECT.match(piece)))
        if m is not None:
            pos = m.end()
    return spans


def segments(text: str) -> list[Segment]:
    """The segments of `text` in order; each `text[start:end] == segment.text`, trimmed, non-empty."""
    out: list[Segment] = []
    for pos, end in _pieces(text):
        piece = text[pos:end]
        start = pos + len(piece) - len(piece.lstrip())
        body = text[start:end].rstrip()
        bullet = _LEAD.match(body)
        if bullet:
            start += bullet.end()
            body = body[bullet.end():]
        if any(c.isalnum() for c in body):
            out.append(Segment(body, start, start + len(body)))
    return out
