"""A small FICTIONAL formulary built directly as Chunks, for retrieval and understanding tests.

NOT MEDICAL INFORMATION: every drug name, indication, dose and interaction below is invented.
It has what the tests need: a drug whose name contains a section word ("Bảo Quản Linh"), a brand shared
by two drugs ("Duomax"), two drugs one typo apart from the same misspelling (Ravolin / Ravoxin), a
3-letter name (Oxa), a section of 300 parts (Longomab), a block that needs a visual check, and a
than_trong question whose answer sits under chong_chi_dinh (bounded pooling).
"""

from __future__ import annotations

from rag_server.domain import Chunk, ChunkKind, SourceRef, block_id_for, chunk_id_for
from rag_server.vocabulary import load_vocabulary

DOCUMENT_ID = "fictional0000001"
LONG_SECTION_PARTS = 300

_V = load_vocabulary()

# drug_id -> (display name, {section_key: [part texts]})
DRUGS: dict[str, tuple[str, dict[str, list[str]]]] = {
    "zentorin": (
        "ZENTORIN (Zentoramid)",
        {
            "ten_chung_quoc_te": ["Zentoramid."],
            "loai_thuoc": ["Thuốc giảm đau hư cấu nhóm zento."],
            "duoc_ly_va_co_che_tac_dung": [
                "Zentorin ức chế enzym tưởng tượng ZT-9. Ở người loét dạ dày tá tràng tiến triển thuốc làm "
                "tăng nguy cơ chảy máu trong mô hình giả định."
            ],
            "chi_dinh": ["Điều trị chứng đau lưng cầu vồng ở người lớn. Hạ sốt mùa mưa giả định."],
            "chong_chi_dinh": [
                "Người bị loét dạ dày tá tràng tiến triển hoặc có tiền sử chảy máu tiêu hóa. Suy gan nặng. "
                "Quá mẫn với zentoramid."
            ],
            "than_trong": ["Thận trọng ở người cao tuổi và người bị hen phế quản. Theo dõi huyết áp."],
            "thoi_ky_mang_thai": ["Không dùng zentorin trong ba tháng cuối thai kỳ (dữ liệu hư cấu)."],
            "thoi_ky_cho_con_bu": ["Zentorin bài tiết vào sữa mẹ với lượng nhỏ (dữ liệu hư cấu)."],
            "tac_dung_khong_mong_muon": ["Thường gặp: buồn ngủ nhẹ, khô miệng hư cấu."],
            "lieu_luong_va_cach_dung": [
                "Người lớn: uống 2 viên 50 mg mỗi ngày.",
                "Suy thận: giảm liều một nửa khi độ thanh thải creatinin dưới 30 ml/phút. "
                "Trẻ em dưới 12 tuổi: không dùng.",
            ],
            "tuong_tac_thuoc": [
                "Dùng cùng Calvimex làm tăng nồng độ zentoramid trong máu.",
                "Warfex: tăng nguy cơ chảy máu dạ dày tá tràng khi phối hợp.",
            ],
            "qua_lieu_va_xu_tri": ["Quá liều gây ngủ sâu; rửa dạ dày và điều trị hỗ trợ."],
            "do_on_dinh_va_bao_quan": ["Bảo quản dưới 30 độ C, tránh ánh sáng."],
            "ten_thuong_mai": ["Zento 50; Zentorix; Duomax; Bé Khỏe."],
        },
    ),
    "calvimex": (
        "CALVIMEX",
        {
            "ten_chung_quoc_te": ["Calvimexol."],
            "loai_thuoc": ["Thuốc hạ huyết áp hư cấu."],
            "chi_dinh": ["Điều trị tăng huyết áp cầu vồng độ một. Phòng cơn đau thắt ngực ảo."],
            "chong_chi_dinh": ["Suy thận nặng có độ thanh thải creatinin dưới 10 ml/phút."],
            "than_trong": ["Thận trọng khi lái xe vì có thể gây chóng mặt hư cấu."],
            "tuong_tac_thuoc": ["Zentorin làm tăng tác dụng hạ áp của calvimex."],
            "lieu_luong_va_cach_dung": ["Uống 10 mg một lần mỗi ngày."],
            "ten_thuong_mai": ["Calvi 10; Duomax."],
        },
    ),
    "metrovastin": (
        "METROVASTIN",
        {
            "ten_chung_quoc_te": ["Metrovastin."],
            "chi_dinh": ["Điều trị rối loạn lipid máu giả tưởng và phòng ngừa xơ vữa kim tuyến."],
            "chong_chi_dinh": ["Bệnh gan đang hoạt động."],
            "lieu_luong_va_cach_dung": ["Uống 20 mg buổi tối."],
        },
    ),
    "ravolin": (
        "RAVOLIN",
        {
            "chi_dinh": ["Điều trị viêm họng sao băng ở trẻ em trên 6 tuổi."],
            "lieu_luong_va_cach_dung": ["Ngậm 1 viên mỗi 4 giờ."],
        },
    ),
    "ravoxin": (
        "RAVOXIN",
        {
            "chi_dinh": ["Điều trị nhiễm khuẩn da mây tím."],
            "lieu_luong_va_cach_dung": ["Bôi 2 lần mỗi ngày."],
        },
    ),
    "bao-quan-linh": (
        "BẢO QUẢN LINH",
        {
            "chi_dinh": ["Điều trị mất ngủ do trăng tròn."],
            "tac_dung_khong_mong_muon": ["Hay gặp: mơ nhiều, ngáp hư cấu."],
            "do_on_dinh_va_bao_quan": ["Bảo quản trong lọ kín màu nâu."],
        },
    ),
    "oxa": (
        "OXA",
        {
            "chi_dinh": ["Sát khuẩn vết xước nhỏ do gai hoa hồng giấy."],
            "than_trong": ["Không bôi lên niêm mạc."],
        },
    ),
    "longomab": (
        "LONGOMAB",
        {
            "chi_dinh": ["Điều trị hội chứng mỏi mắt vì màn hình kéo dài."],
            "tac_dung_khong_mong_muon": [
                f"Phản ứng hư cấu số {i}: mô tả ngắn phần {i} của danh sách dài."
                for i in range(LONG_SECTION_PARTS)
            ],
            "lieu_luong_va_cach_dung": ["Liều theo cân nặng: xem bảng trên trang PDF."],
        },
    ),
}

# Block descriptors (lifted-out tables): drug_id -> [(section_key, table_id, text)]
BLOCKS: dict[str, list[tuple[str, str, str]]] = {
    "longomab": [("lieu_luong_va_cach_dung", "t1", "Bảng liều theo cân nặng (xem PDF).")],
}


def page_for(drug_index: int, part_index: int) -> SourceRef:
    printed = 101 + drug_index * 2 + part_index // 50
    return SourceRef(document_id=DOCUMENT_ID, physical_page=printed + 2, printed_page=printed)


def build_chunks() -> list[Chunk]:
    chunks: list[Chunk] = []
    for d, (drug_id, (name, sections)) in enumerate(DRUGS.items()):
        for section_key, parts in sections.items():
            for part_index, text in enumerate(parts):
                chunks.append(
                    Chunk(
                        chunk_id=chunk_id_for(drug_id, section_key, part_index),
                        drug_id=drug_id,
                        drug_name=name,
                        section_key=section_key,
                        section_title=_V.title(section_key),
                        part_index=part_index,
                        chunk_kind=ChunkKind.PROSE,
                        text=text,
                        source_refs=[page_for(d, part_index)],
                    )
                )
        for section_key, table_id, text in BLOCKS.get(drug_id, []):
            chunks.append(
                Chunk(
                    chunk_id=block_id_for(drug_id, section_key, table_id),
                    drug_id=drug_id,
                    drug_name=name,
                    section_key=section_key,
                    section_title=_V.title(section_key),
                    part_index=len(sections.get(section_key, [])),
                    chunk_kind=ChunkKind.BLOCK,
                    text=text,
                    source_refs=[page_for(d, 0)],
                    requires_visual_check=True,
                    table_id=table_id,
                )
            )
    return chunks
