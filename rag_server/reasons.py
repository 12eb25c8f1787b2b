"""Decisions and the one table mapping every reason to a Vietnamese message.

An unmapped reason must never fall through to a generic "no data" message (that would misdescribe
an outage), so tests walk the DecisionReason enum against REASON_MESSAGES.
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_server.domain import Decision, DecisionKind, Reason, SourceRef

REASON_MESSAGES: dict[Reason, str] = {
    Reason.GROUNDED_EVIDENCE_AVAILABLE: "Có bằng chứng từ Dược thư kèm nguồn trang.",
    Reason.OUT_OF_SCOPE: "Câu hỏi nằm ngoài phạm vi Dược thư Quốc gia (thuốc dùng cho người).",
    Reason.UNDERSTANDING_PROVIDER_UNAVAILABLE: "Dịch vụ phân tích câu hỏi tạm thời không khả dụng.",
    Reason.UNDERSTANDING_MALFORMED_OUTPUT: "Không phân tích được câu hỏi; vui lòng diễn đạt lại.",
    Reason.MISSING_REQUIRED_FIELD: "Cần thêm thông tin (tên thuốc, mục hoặc bệnh) để trả lời.",
    Reason.CLARIFY_LOOP_EXHAUSTED: "Đã hỏi lại nhiều lần mà chưa đủ thông tin; dừng để tránh trả lời sai.",
    Reason.PARENT_HYDRATION_FAILED: "Không tìm thấy đoạn Dược thư phù hợp để làm bằng chứng.",
    Reason.MISSING_PROVENANCE: "Bằng chứng thiếu thông tin trang nguồn nên không được dùng.",
    Reason.VISUAL_VERIFICATION_REQUIRED: "Nội dung là bảng hoặc công thức: vui lòng đối chiếu trang PDF.",
    Reason.REQUEST_BUDGET_EXHAUSTED: "Yêu cầu vượt quá ngân sách xử lý cho phép.",
    Reason.PROVIDER_UNAVAILABLE: "Dịch vụ sinh câu trả lời tạm thời không khả dụng.",
    Reason.MALFORMED_OUTPUT: "Câu trả lời sinh ra không hợp lệ nên đã bị loại.",
    Reason.EVIDENCE_INSUFFICIENT: "Bằng chứng trong Dược thư không đủ để trả lời câu hỏi này.",
    Reason.UNGROUNDED_NUMBER: "Một con số trong câu trả lời không có trong nguồn trích dẫn.",
    Reason.INVALID_CITATION: "Trích dẫn không hợp lệ nên câu trả lời bị loại.",
    Reason.UNCITED_CLAIM: "Có nhận định không kèm trích dẫn nên câu trả lời bị loại.",
    Reason.UNSUPPORTED_CLAIM: "Có nhận định không được nguồn trích dẫn hỗ trợ.",
    Reason.INCOMPLETE_ANSWER: "Không tạo được câu trả lời đầy đủ từ bằng chứng.",
    Reason.INSUFFICIENT_RETRIEVAL_SCORE: "Không có kết quả đủ liên quan trong Dược thư.",
    Reason.INSUFFICIENT_EVIDENCE: "Không tìm thấy bằng chứng cho khía cạnh này; không có nghĩa là an toàn.",
    Reason.DRUG_NOT_FOUND: "Không tìm thấy thuốc này trong Dược thư.",
    Reason.AMBIGUOUS_DRUG: "Tên thuốc khớp với nhiều chuyên luận; vui lòng nói rõ thuốc nào.",
    Reason.SECTION_NOT_FOUND: "Chuyên luận của thuốc này không có mục được hỏi.",
    Reason.CORPUS_NOT_LOADED: "Chưa nạp dữ liệu Dược thư vào hệ thống.",
    Reason.SMALLTALK: "Xin chào! Hãy hỏi về một thuốc trong Dược thư Quốc gia.",
    Reason.EMERGENCY: (
        "Đây có thể là tình huống khẩn cấp: hãy gọi cấp cứu 115 hoặc đến cơ sở y tế gần nhất ngay, "
        "mang theo vỏ thuốc. Không chờ câu trả lời từ hệ thống."
    ),
    Reason.HARMFUL_REQUEST: "Không thể hỗ trợ yêu cầu có thể gây hại cho người khác.",
}

_KIND_OF: dict[Reason, DecisionKind] = {
    Reason.GROUNDED_EVIDENCE_AVAILABLE: DecisionKind.ANSWERABLE,
    Reason.VISUAL_VERIFICATION_REQUIRED: DecisionKind.VERIFY_PDF,
    Reason.MISSING_REQUIRED_FIELD: DecisionKind.CLARIFY,
    Reason.AMBIGUOUS_DRUG: DecisionKind.CLARIFY,
}


def kind_for(reason: Reason) -> DecisionKind:
    """The decision kind a reason implies (everything not listed abstains)."""
    return _KIND_OF.get(reason, DecisionKind.ABSTAIN)


def make_decision(reason: Reason, pages: Iterable[SourceRef] = (), detail: str = "") -> Decision:
    message = REASON_MESSAGES[reason]
    if detail:
        message = f"{message} ({detail})"
    return Decision(kind_for(reason), reason, message, tuple(pages))
