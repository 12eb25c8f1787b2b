"""Plain records of a parsed page: spans, text lines, tables, pages, and the physical -> printed page map.

No PyMuPDF types here, so the pure stages (reading order, running headers, segmentation, chunking)
can be tested on hand-made lines. Physical pages are 1-based, as a PDF viewer shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar, cast

T = TypeVar("T")


class _Once(Generic[T]):
    """A property computed on first use and then kept in the instance (`functools.cached_property` without
    its lock: a line is read by one thread, and a book has a million lines)."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:  # looked up on the class
            return self  # type: ignore[return-value]
        value = self.compute(obj)
        obj.__dict__[self.name] = value
        return value

BBox = tuple[float, float, float, float]


class Span(NamedTuple):
    """A run of text in one style, as PyMuPDF reports it (merged with neighbours of the same style).
    A named tuple: a book has millions of them, made and sent between processes quickly."""

    text: str
    font: str = ""
    size: float = 10.0
    bold: bool = False
    italic: bool = False
    bbox: BBox = (0.0, 0.0, 0.0, 0.0)
    baseline: float = 0.0

    @property
    def styled(self) -> bool:
        return self.bold or self.italic


@dataclass(init=False)
class TextLine:
    """One printed line (or a piece of one, when a wide gap splits it) on one physical page. Its spans are
    never changed once it is made, so what is read from them (text, size, styles) is computed once; its
    edges (x0, y0, x1, y1) and height are plain attributes, set whenever `bbox` is."""

    spans: list[Span]
    page: int
    bbox: BBox
    column: int = 0  # 0 single/left, 1 right, -1 full width (after reading order)
    visual: bool = False  # part of a 2-D formula region: must be checked on the page
    table_id: str = ""  # set on the marker line that stands where a lifted-out table was
    x0: float = field(init=False, repr=False, compare=False)
    y0: float = field(init=False, repr=False, compare=False)
    x1: float = field(init=False, repr=False, compare=False)
    y1: float = field(init=False, repr=False, compare=False)
    height: float = field(init=False, repr=False, compare=False)  # at least 0.1

    def __init__(self, spans: list[Span], page: int, bbox: BBox, column: int = 0, visual: bool = False,
                 table_id: str = "") -> None:
        # Straight into the instance dict: lines are made by the hundred thousand (see __setattr__).
        state = self.__dict__
        state["spans"], state["page"], state["bbox"] = spans, page, bbox
        state["column"], state["visual"], state["table_id"] = column, visual, table_id
        state["x0"], state["y0"], state["x1"], state["y1"] = bbox
        state["height"] = max(0.1, bbox[3] - bbox[1])

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        if name == "bbox":
            box = cast(BBox, value)
            object.__setattr__(self, "x0", box[0])
            object.__setattr__(self, "y0", box[1])
            object.__setattr__(self, "x1", box[2])
            object.__setattr__(self, "y1", box[3])
            object.__setattr__(self, "height", max(0.1, box[3] - box[1]))

    @_Once
    def text(self) -> str:
        return "".join(s.text for s in self.spans)

    def derived(self, name: str, compute: Callable[[TextLine], T]) -> T:
        """A value computed from the line's spans (by a later stage), once: they never change."""
        memo: dict[str, T] | None = self.__dict__.get("_derived")
        if memo is None:
            memo = self.__dict__["_derived"] = {}
        elif name in memo:
            return memo[name]
        value = memo[name] = compute(self)
        return value

    @_Once
    def size(self) -> float:
        """Size of the line's text, weighted by characters."""
        total = sum(len(s.text.strip()) for s in self.spans)
        if total == 0:
            return self.spans[0].size if self.spans else 0.0
        return sum(s.size * len(s.text.strip()) for s in self.spans) / total

    @_Once
    def all_bold(self) -> bool:
        content = [s for s in self.spans if s.text.strip()]
        return bool(content) and all(s.bold for s in content)

    @_Once
    def all_italic(self) -> bool:
        content = [s for s in self.spans if s.text.strip()]
        return bool(content) and all(s.italic for s in content)


@dataclass
class TableRegion:
    """A table lifted out of the prose: its rows (cells as text) and where it was."""

    page: int
    bbox: BBox
    rows: list[list[str]]


@dataclass
class PageLayout:
    page: int  # physical, 1-based
    width: float
    height: float
    lines: list[TextLine] = field(default_factory=list)  # body, in reading order (table markers included)
    running: list[TextLine] = field(default_factory=list)  # running headers/footers removed from the text
    tables: dict[str, TableRegion] = field(default_factory=dict)  # page-local id -> table
    folio: int | None = None  # printed page number read from the running lines
    columns: int = 1
    kept_edges: list[str] = field(default_factory=list)  # rows at the page edges left in the body


@dataclass
class ParsedDocument:
    pages: list[PageLayout]
    page_map: dict[int, int | None]  # physical -> printed folio (None when unknown)
    body_size: float
    inferred: list[int] = field(default_factory=list)  # pages whose folio was inferred from neighbours

    def printed(self, page: int) -> int | None:
        return self.page_map.get(page)
