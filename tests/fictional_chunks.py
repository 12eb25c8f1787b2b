"""A small FICTIONAL formulary as domain Chunks, for store / ingest tests (imported by test modules).

Every drug and statement here is invented — NOT medical information. Texts differ in length and wording
so BM25 and dense scores do not tie (ties may legitimately be broken differently by two engines).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag_server.domain import Chunk, ChunkKind, SourceRef, block_id_for, chunk_id_for
from rag_server.store.base import PointData
from rag_server.text.bm25 import document_vector

DISCLAIMER = "Dữ liệu hư cấu để kiểm thử, không phải thông tin y khoa."
DOCUMENT_ID = "f1c7f1c7f1c7f1c7"

DRUGS = {
    "zentravir": "ZENTRAVIR",
    "quofenol": "QUOFENOL",
    "miraxolam": "MIRAXOLAM",
}

# (section_key, title, list of part texts); {name} is replaced by the display name.
SECTIONS: list[tuple[str, str, list[str]]] = [
    (
        "chi_dinh",
        "Chỉ định",
        [
            "{name} được chỉ định cho bệnh giả định Varnel ở người lớn.",
            "{name} dùng phối hợp trong hội chứng hư cấu Ostrel khi các thuốc khác không đáp ứng, "
            "theo dõi sát.",
        ],
    ),
    (
        "chong_chi_dinh",
        "Chống chỉ định",
        [
            "Người bệnh suy thận nặng, mẫn cảm với {name} hoặc với bất kỳ thành phần nào của chế phẩm.",
        ],
    ),
    (
        "than_trong",
        "Thận trọng",
        [
            "Thận trọng khi dùng {name} cho người cao tuổi, người có tiền sử loét dạ dày tá tràng.",
            "Giảm liều ở người bệnh suy gan; theo dõi chức năng gan định kỳ trong suốt thời gian điều trị.",
            "Không lái xe khi mới bắt đầu dùng {name}.",
        ],
    ),
    (
        "lieu_luong_va_cach_dung",
        "Liều lượng và cách dùng",
        [
            "Người lớn: uống 2,5 mg/kg/ngày, chia 2 lần, sau bữa ăn. Tối đa 400 mg mỗi ngày.",
        ],
    ),
    (
        "tuong_tac_thuoc",
        "Tương tác thuốc",
        [
            "Dùng đồng thời {name} với thuốc chống đông hư cấu Brelamid làm tăng nguy cơ chảy máu.",
        ],
    ),
]

# per-drug extra words so the three monographs are not identical texts
FLAVOUR = {
    "zentravir": "viên nén",
    "quofenol": "dung dịch uống có hương cam",
    "miraxolam": "bột pha tiêm truyền tĩnh mạch chậm trong bệnh viện tuyến tỉnh",
}


def fictional_chunks(long_section_parts: int = 0) -> list[Chunk]:
    """3 fictional monographs (+ one table block); with `long_section_parts`, zentravir's
    `tac_dung_khong_mong_muon` section gets that many parts (for scroll paging tests)."""
    chunks: list[Chunk] = []
    for n, (drug_id, name) in enumerate(DRUGS.items()):
        display = name.capitalize()
        for section_key, title, parts in SECTIONS:
            for part_index, template in enumerate(parts):
                text = f"{template.format(name=display)} Dạng {FLAVOUR[drug_id]}. ({DISCLAIMER})"
                chunks.append(_chunk(drug_id, name, section_key, title, part_index, text, page=10 + n))
        chunks.append(
            Chunk(
                chunk_id=block_id_for(drug_id, "lieu_luong_va_cach_dung", "t1"),
                drug_id=drug_id,
                drug_name=name,
                section_key="lieu_luong_va_cach_dung",
                section_title="Liều lượng và cách dùng",
                part_index=0,
                chunk_kind=ChunkKind.BLOCK,
                text=f"Bảng liều hư cấu của {display}: cân nặng | liều. ({DISCLAIMER})",
                source_refs=[SourceRef(DOCUMENT_ID, 10 + n, 100 + n)],
                requires_visual_check=True,
                table_id="t1",
            )
        )
    for part_index in range(long_section_parts):
        # tf of "ngứa" and the length both vary with part_index, so no two parts score the same
        text = (
            "Phản ứng hư cấu: "
            + "ngứa " * (1 + part_index % 5)
            + "nhẹ " * part_index
            + f"ở đối tượng thử nghiệm. ({DISCLAIMER})"
        )
        chunks.append(
            _chunk(
                "zentravir",
                "ZENTRAVIR",
                "tac_dung_khong_mong_muon",
                "Tác dụng không mong muốn (ADR)",
                part_index,
                text,
                page=30 + part_index // 20,
            )
        )
    return chunks


def _chunk(
    drug_id: str, name: str, section_key: str, title: str, part_index: int, text: str, page: int
) -> Chunk:
    return Chunk(
        chunk_id=chunk_id_for(drug_id, section_key, part_index),
        drug_id=drug_id,
        drug_name=name,
        section_key=section_key,
        section_title=title,
        part_index=part_index,
        chunk_kind=ChunkKind.PROSE,
        text=text,
        source_refs=[SourceRef(DOCUMENT_ID, page, page + 90)],
    )


def fake_dense(key: str, dims: int) -> list[float]:
    """A deterministic unit vector per key (store tests need real vectors, not a particular model)."""
    seed = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
    vec = np.random.default_rng(seed).standard_normal(dims)
    norm = math.sqrt(float(vec @ vec))
    return [float(x) / norm for x in vec]


def point_data(chunks: list[Chunk], dims: int) -> list[PointData]:
    return [
        PointData(chunk=c, dense=fake_dense(c.chunk_id, dims), sparse=document_vector(c.text)) for c in chunks
    ]


@dataclass
class FakeGate:
    name: str
    count: int
    examples: list[str] = field(default_factory=list)


@dataclass
class FakeBuildResult:
    document_id: str
    pdf_sha256: str
    pages: int
    monograph_count: int
    section_count: int
    chunks: list[Chunk]
    gates: list[Any]


def build_from_chunks(chunks: list[Chunk], gates: list[Any] | None = None) -> Any:
    """A build function with ingest.build.build_chunks's signature that returns `chunks` for any PDF
    (stands in for the PDF parser, which is tested on its own)."""

    def build(pdf_path: Path, vocabulary: Any = None, max_tokens: int = 800, progress: Any = None) -> Any:
        from ingest.errors import IngestInputError, InputErrorKind

        data = Path(pdf_path).read_bytes()
        if not data.startswith(b"%PDF-"):
            raise IngestInputError(InputErrorKind.NOT_PDF, f"{pdf_path} is not a PDF")
        if progress is not None:
            for stage in ("parse", "segment", "chunk", "gates"):
                progress(stage, 1, 1, stage)
        return FakeBuildResult(
            document_id=hashlib.sha256(data).hexdigest()[:16],
            pdf_sha256=hashlib.sha256(data).hexdigest(),
            pages=3,
            monograph_count=len({c.drug_id for c in chunks}),
            section_count=len({(c.drug_id, c.section_key) for c in chunks}),
            chunks=list(chunks),
            gates=list(gates)
            if gates is not None
            else [FakeGate("orphan_text", 0), FakeGate("empty_sections", 0)],
        )

    return build


def write_tiny_pdf(path: Path, drugs: tuple[str, ...] = ("ZELVORIN", "QUOFENOL"), note: str = "") -> Path:
    """A tiny FICTIONAL formulary PDF (rendered with formulary_fixtures.render) the real parser accepts."""
    from formulary_fixtures.render import Heading, NewPage, Para, Tag, Title, inline, render_book

    blocks: list[Any] = [NewPage()]
    for name in drugs:
        display = name.capitalize()
        blocks += [
            Tag(name.lower(), "ten_chung_quoc_te"),
            Title(name, display),
            Para(inline(f"**Tên chung quốc tế:** {display}.")),
            Para(inline("**Mã ATC:** X99ZZ01.")),
            Para(inline("**Loại thuốc:** Thuốc hư cấu.")),
            Heading("Chỉ định"),
            Para(inline(f"{display} được chỉ định cho bệnh giả định Varnel. {note} ({DISCLAIMER})")),
            Heading("Chống chỉ định"),
            Para(inline(f"Người bệnh suy thận nặng, mẫn cảm với {display}. ({DISCLAIMER})")),
            Heading("Tương tác thuốc"),
            Para(inline(f"Dùng {display} với thuốc chống đông hư cấu làm tăng nguy cơ chảy máu. {note}")),
        ]
    path.write_bytes(render_book(blocks, folio=lambda n: 100 + n, title="Fictional formulary").pdf)
    return path
