"""Gates: named counts over monographs and chunks that must all be 0 before a corpus may be loaded.

Each gate keeps up to 5 examples (chunk ids, drug ids or pages) so a failure can be looked up, and the
physical pages involved (ascending) so `ingest.diagnose` can show what the parser saw there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.segment import Monograph
from rag_server.domain import Chunk, ChunkKind
from rag_server.text import count_tokens
from rag_server.vocabulary import Vocabulary

MAX_EXAMPLES = 5


@dataclass
class Gate:
    name: str
    count: int
    examples: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)  # physical pages involved, ascending


GATE_NAMES = (
    "chunks_without_printed_page",
    "chunks_without_source_refs",
    "unknown_section_keys",
    "empty_sections",
    "empty_chunks",
    "duplicate_chunk_ids",
    "chunks_over_ceiling",
    "monographs_without_indication",
    "monographs_without_sections",
    "duplicate_drug_ids",
    "pages_without_folio",
    "unassigned_monograph_text",
    "monographs_starting_over",
    "tables_without_image",
    "chunks_without_boxes",
)
# A monograph whose section headings start over (this many distinct sections headed a second time) holds
# two monographs: a title was missed, and the second drug's text would be served as the first's.
STARTS_OVER = 3


def _gate(name: str, items: Iterable[tuple[str, Iterable[int]]]) -> Gate:
    found = list(items)
    pages = sorted({page for _, where in found for page in where})
    return Gate(name=name, count=len(found), examples=[item for item, _ in found[:MAX_EXAMPLES]], pages=pages)


def _chunk_pages(chunk: Chunk) -> list[int]:
    return [r.physical_page for r in chunk.source_refs]


def _mono_pages(mono: Monograph) -> list[int]:
    return [mono.page]


def compute_gates(monographs: list[Monograph], chunks: list[Chunk], page_map: dict[int, int | None],
                  vocab: Vocabulary, max_tokens: int) -> list[Gate]:
    known = set(vocab.keys)
    id_counts = Counter(c.chunk_id for c in chunks)
    drug_counts = Counter(m.drug_id for m in monographs)
    content_pages = sorted({ref.physical_page for c in chunks for ref in c.source_refs})
    by_id: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_id.setdefault(c.chunk_id, []).append(c)
    gates = [
        _gate("chunks_without_printed_page",
              ((c.chunk_id, [r.physical_page for r in c.source_refs if r.printed_page <= 0]) for c in chunks
               if c.source_refs and any(r.printed_page <= 0 for r in c.source_refs))),
        _gate("chunks_without_source_refs", ((c.chunk_id, []) for c in chunks if not c.source_refs)),
        _gate("unknown_section_keys",
              ((f"{m.drug_id}:{s.key}", [s.page]) for m in monographs for s in m.sections
               if s.key not in known)),
        _gate("empty_sections",
              ((f"{m.drug_id}:{s.key}", [s.page]) for m in monographs for s in m.sections
               if not s.text and not s.tables)),
        _gate("empty_chunks", ((c.chunk_id, _chunk_pages(c)) for c in chunks if not c.text.strip())),
        _gate("duplicate_chunk_ids",
              ((cid, [p for c in by_id[cid] for p in _chunk_pages(c)])
               for cid in sorted(cid for cid, n in id_counts.items() if n > 1))),
        _gate("chunks_over_ceiling",
              ((c.chunk_id, _chunk_pages(c)) for c in chunks if count_tokens(c.text) > max_tokens)),
        _gate("monographs_without_indication",  # sections.toml [roles] indication: every monograph has one
              ((m.drug_id, _mono_pages(m)) for m in monographs if m.section(vocab.roles.indication) is None)),
        _gate("monographs_without_sections",
              ((m.drug_id, _mono_pages(m)) for m in monographs if not m.sections)),
        _gate("duplicate_drug_ids",
              ((d, [m.page for m in monographs if m.drug_id == d])
               for d in sorted(d for d, n in drug_counts.items() if n > 1))),
        _gate("pages_without_folio", ((str(p), [p]) for p in content_pages if not page_map.get(p))),
        _gate("unassigned_monograph_text",
              ((f"{m.drug_id}: {' '.join(p.text for p in m.unassigned)[:80]}", [p.page for p in m.unassigned])
               for m in monographs if m.unassigned)),
        _gate("monographs_starting_over",
              ((f"{m.drug_id}: {', '.join(m.ignored_headings[:4])}", _mono_pages(m))
               for m in monographs if _repeated_sections(m, vocab) >= STARTS_OVER)),
        # A table is shown as printed (the crop beside its cells): a block without its image cannot be.
        _gate("tables_without_image",
              ((c.chunk_id, _chunk_pages(c)) for c in chunks if c.chunk_kind is ChunkKind.BLOCK
               and not c.table_png)),
        # A citation is shown on the page by the boxes of its lines: text outside every box cannot be.
        _gate("chunks_without_boxes", ((c.chunk_id, _chunk_pages(c)) for c in chunks if not boxed(c))),
    ]
    assert tuple(g.name for g in gates) == GATE_NAMES
    return gates


def boxed(chunk: Chunk) -> bool:
    """Every character of the chunk's text but white space lies in one of its boxes, each box a range of
    the text with an area on one of the chunk's pages, in text order."""
    pages = set(_chunk_pages(chunk))
    pos = 0
    for box in chunk.boxes:
        if box.start < pos or box.end > len(chunk.text) or chunk.text[pos:box.start].strip() \
                or box.physical_page not in pages or box.x1 <= box.x0 or box.y1 <= box.y0:
            return False
        pos = box.end
    return not chunk.text[pos:].strip()


def _repeated_sections(mono: Monograph, vocab: Vocabulary) -> int:
    """Distinct known sections whose heading occurs again in the monograph (kept as text by segment)."""
    return len({key for h in mono.ignored_headings if (key := vocab.heading_key(h)) is not None})
