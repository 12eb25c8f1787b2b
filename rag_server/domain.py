"""Domain records shared by ingestion, the store and retrieval (plain dataclasses, no protobuf)."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any, NamedTuple

# uuid5 namespace of point ids: point id = uuid5(POINT_NAMESPACE, chunk_id), so a reload overwrites.
POINT_NAMESPACE = uuid.UUID("6f1c3a52-9f0e-5b8e-a7c4-2d1f0e9b7a11")
SCHEMA_VERSION = "2"  # 2: payloads carry visual_spans, table_rows, table_png and boxes (1 loads too)


class ChunkKind(str, Enum):  # noqa: UP042 (str() must stay the member name)
    PROSE = "prose"
    BLOCK = "block"


class ScoreKind(str, Enum):  # noqa: UP042
    EXACT = "exact"
    LEXICAL = "lexical"
    DENSE = "dense"
    FUSED = "fused"
    RERANK = "rerank"


class MatchKind(str, Enum):  # noqa: UP042 (mirrors rag.v1.MatchKind)
    """How a name or a fact was matched."""

    EXACT = "exact"
    VARIANT = "variant"  # a spelling variant of a drug name
    TYPO = "typo"  # a bounded typo
    PREFIX = "prefix"  # the first letters of an INN or brand
    CLASS = "class"  # the text names a class the medicine belongs to
    SYNONYM = "synonym"  # a clinical-vocabulary synonym of a condition


@dataclass(frozen=True)
class FactMatch:
    """Why a chunk was picked for a patient fact: the fact, the name read from it, the words found."""

    fact: str
    name: str
    matched: str
    kind: MatchKind
    chunk_id: str
    detail: str = ""


class DecisionKind(IntEnum):
    """Mirrors rag.v1.DecisionKind (a test keeps the two equal)."""

    UNSPECIFIED = 0
    ANSWERABLE = 1
    ABSTAIN = 2
    VERIFY_PDF = 3
    CLARIFY = 4


class Reason(IntEnum):
    """Mirrors rag.v1.DecisionReason (a test keeps the two equal): one value per terminal state."""

    UNSPECIFIED = 0
    GROUNDED_EVIDENCE_AVAILABLE = 1
    OUT_OF_SCOPE = 2
    UNDERSTANDING_PROVIDER_UNAVAILABLE = 3
    UNDERSTANDING_MALFORMED_OUTPUT = 4
    MISSING_REQUIRED_FIELD = 5
    CLARIFY_LOOP_EXHAUSTED = 6
    PARENT_HYDRATION_FAILED = 7
    MISSING_PROVENANCE = 8
    VISUAL_VERIFICATION_REQUIRED = 9
    REQUEST_BUDGET_EXHAUSTED = 10
    PROVIDER_UNAVAILABLE = 11
    MALFORMED_OUTPUT = 12
    EVIDENCE_INSUFFICIENT = 13
    UNGROUNDED_NUMBER = 14
    INVALID_CITATION = 15
    UNCITED_CLAIM = 16
    UNSUPPORTED_CLAIM = 17
    INCOMPLETE_ANSWER = 18
    INSUFFICIENT_RETRIEVAL_SCORE = 19
    INSUFFICIENT_EVIDENCE = 20
    DRUG_NOT_FOUND = 21
    AMBIGUOUS_DRUG = 22
    SECTION_NOT_FOUND = 23
    CORPUS_NOT_LOADED = 24
    SMALLTALK = 25
    EMERGENCY = 26
    HARMFUL_REQUEST = 27
    EFFECT_NOT_LISTED = 28


@dataclass(frozen=True)
class SourceRef:
    document_id: str
    physical_page: int
    printed_page: int

    def to_payload(self) -> dict[str, Any]:
        return {"document_id": self.document_id, "physical_page": self.physical_page,
                "printed_page": self.printed_page}

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> SourceRef:
        return cls(str(data["document_id"]), int(data["physical_page"]), int(data["printed_page"]))


class TextBox(NamedTuple):
    """Where [start, end) of a chunk's text (a printed line, or the part of one a chunk holds) is printed:
    its physical page and its box in PDF points, origin at the top left of the page (as PyMuPDF gives)."""

    start: int
    end: int
    physical_page: int
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True)
class PageBox:
    """A box on a page, for a client to draw over the printed page (a cited span's lines, a table)."""

    physical_page: int
    printed_page: int  # 0 = unknown
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True)
class TableView:
    """A lifted table as a client shows it: its cells (header row first), the crop of the printed table and
    the pages it is on. Never paraphrased: it is shown as it was printed, to be checked on the page."""

    chunk_id: str
    rows: tuple[tuple[str, ...], ...]
    image_png: bytes
    pages: tuple[SourceRef, ...]


def chunk_id_for(drug_id: str, section_key: str, part_index: int) -> str:
    return f"{drug_id}__{section_key}__{part_index}"


def block_id_for(drug_id: str, section_key: str, table_id: str) -> str:
    return f"{drug_id}__{section_key}__block__{table_id}"


def point_id_for(chunk_id: str) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, chunk_id))


@dataclass
class Chunk:
    """One unit of evidence: a part of a section (prose) or a lifted-out table/formula (block)."""

    chunk_id: str
    drug_id: str
    drug_name: str
    section_key: str
    section_title: str
    part_index: int
    chunk_kind: ChunkKind
    text: str
    source_refs: list[SourceRef] = field(default_factory=list)
    # True for a table block, and for a prose chunk whose whole text must be read on the page; a prose
    # chunk with only some such text (a 2-D formula, a table marker) lists it in `visual_spans` instead.
    requires_visual_check: bool = False
    table_id: str = ""
    visual_spans: list[tuple[int, int]] = field(default_factory=list)  # [start, end) to read on the page
    table_rows: list[list[str]] = field(default_factory=list)  # a table block's cells, header row first
    table_png: bytes = b""  # a table block: the printed table region, rendered at ingest (PNG)
    boxes: list[TextBox] = field(default_factory=list)  # where each line of the text is printed, in order
    # BM25 term weights (term id -> TF saturation) as stored in the sparse vector; set on search hits by
    # the store, never part of the payload.
    terms: dict[int, float] | None = field(default=None, compare=False, repr=False)
    # The stored dense vector (unit length: cosine collections normalise on insert); set on search hits by
    # the store with `terms`, for the reranker's cosines. Never part of the payload.
    dense: list[float] | None = field(default=None, compare=False, repr=False)

    @property
    def point_id(self) -> str:
        return point_id_for(self.chunk_id)

    def to_payload(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "drug_id": self.drug_id,
            "drug_name": self.drug_name,
            "section_key": self.section_key,
            "section_title": self.section_title,
            "part_index": self.part_index,
            "chunk_kind": self.chunk_kind.value,
            "text": self.text,
            "source_refs": [ref.to_payload() for ref in self.source_refs],
            "requires_visual_check": self.requires_visual_check,
            "table_id": self.table_id,
            "visual_spans": [n for span in self.visual_spans for n in span],
            "table_rows": [list(row) for row in self.table_rows],
            "table_png": base64.b64encode(self.table_png).decode("ascii"),
            "boxes": [n for box in self.boxes for n in box],
        }

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> Chunk:
        return cls(
            chunk_id=str(data["chunk_id"]),
            drug_id=str(data["drug_id"]),
            drug_name=str(data["drug_name"]),
            section_key=str(data["section_key"]),
            section_title=str(data["section_title"]),
            part_index=int(data["part_index"]),
            chunk_kind=ChunkKind(str(data["chunk_kind"])),
            text=str(data["text"]),
            source_refs=[SourceRef.from_payload(r) for r in data.get("source_refs", [])],
            requires_visual_check=bool(data.get("requires_visual_check", False)
                                       or data.get("has_quarantined_content", False)),
            table_id=str(data.get("table_id", "")),
            visual_spans=_pairs(data.get("visual_spans") or []),
            table_rows=[[str(cell) for cell in row] for row in data.get("table_rows") or []],
            table_png=base64.b64decode(str(data.get("table_png") or "")),
            boxes=_boxes(data.get("boxes") or []),
        )


# Payload keys the store leaves out of search results and scrolls unless a caller asks for them
# (ChunkFilter.with_images / with_boxes): the bulk of a payload, needed only to show a citation or a table.
IMAGE_PAYLOAD_KEY = "table_png"
BOXES_PAYLOAD_KEY = "boxes"


def _pairs(flat: list[Any]) -> list[tuple[int, int]]:
    return [(int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]


def _boxes(flat: list[Any]) -> list[TextBox]:
    """TextBoxes from the payload's flat list (start, end, page, x0, y0, x1, y1, start, ...)."""
    return [TextBox(int(flat[i]), int(flat[i + 1]), int(flat[i + 2]), float(flat[i + 3]), float(flat[i + 4]),
                    float(flat[i + 5]), float(flat[i + 6])) for i in range(0, len(flat) - 6, 7)]


def boxes_for(chunk: Chunk, start: int, end: int) -> list[PageBox]:
    """The boxes on the page of the lines a span [start, end) of `chunk.text` touches (a span across a page
    break has boxes on both pages), in text order; an empty span gives the box of the line it lies in.
    Empty when the chunk carries no boxes (an old payload, or one read without them)."""
    printed = {r.physical_page: r.printed_page for r in chunk.source_refs}
    found: dict[PageBox, None] = {}
    for box in chunk.boxes:
        touches = box.start < end and box.end > start if end > start else box.start <= start < box.end
        if touches:
            found[PageBox(box.physical_page, printed.get(box.physical_page, 0),
                          box.x0, box.y0, box.x1, box.y1)] = None
    return list(found)


def in_visual_span(chunk: Chunk, start: int, end: int) -> bool:
    """[start, end) of the chunk's text touches text that must be read on the page (a formula, a table
    marker): a claim resting on it cannot be shown as verified prose."""
    return chunk.requires_visual_check or any(s < end and e > start for s, e in chunk.visual_spans)


def plain_ranges(chunk: Chunk) -> list[tuple[int, int]]:
    """The ranges of the chunk's text outside its visual spans (white space at their ends trimmed): the
    prose that may be shown (none for a chunk that must be read on the page as a whole)."""
    if chunk.requires_visual_check:
        return []
    out: list[tuple[int, int]] = []
    pos = 0
    for start, end in [*chunk.visual_spans, (len(chunk.text), len(chunk.text))]:
        piece = chunk.text[pos:start]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((pos + lead, pos + len(piece.rstrip())))
        pos = max(pos, end)
    return out


def table_view(chunk: Chunk) -> TableView | None:
    """The table of a block chunk (None for a chunk without lifted cells)."""
    if not chunk.table_rows:
        return None
    return TableView(chunk.chunk_id, tuple(tuple(row) for row in chunk.table_rows), chunk.table_png,
                     tuple(chunk.source_refs))


@dataclass
class Hit:
    """A chunk with the score that selected it. Scores of different kinds are never compared."""

    chunk: Chunk
    score: float
    score_kind: ScoreKind


@dataclass(frozen=True)
class Decision:
    """What the service decided to do with a request (rag_server.reasons.make_decision builds one)."""

    kind: DecisionKind
    reason: Reason
    message: str
    pages: tuple[SourceRef, ...] = ()  # VERIFY_PDF: the pages to read
    # The chunks that must be checked on the page (tables, wholly visual prose); the rest is verified prose
    visual_check_chunk_ids: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """The evidence may be shown (answered, or answered with a page to check)."""
        return self.kind in (DecisionKind.ANSWERABLE, DecisionKind.VERIFY_PDF)


@dataclass(frozen=True)
class Manifest:
    corpus_sha: str
    embedding_model: str
    dims: int
    monograph_count: int
    section_count: int
    chunk_count: int
    block_count: int
    created_at: str
    generation: str
    document_id: str
    schema_version: str = SCHEMA_VERSION
    # The dense floor of the indication fallback, calibrated at ingest for this corpus and embedder
    # (ingest/calibrate.py); 0.0 = not calibrated: no dense fallback.
    indication_dense_floor: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
