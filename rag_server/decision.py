"""Decisions and the one table mapping every reason to a Vietnamese message.

An unmapped reason must never fall through to a generic "no data" message (that would misdescribe
an outage), so tests walk the DecisionReason enum against REASON_MESSAGES.
"""

from __future__ import annotations

from collections.abc import Iterable

from rag_server.gen.rag.v1 import common_pb2 as pb

R = pb.DecisionReason
K = pb.DecisionKind

REASON_MESSAGES: dict[int, str] = {
    R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE: "Có bằng chứng từ Dược thư kèm nguồn trang.",
    R.DECISION_REASON_OUT_OF_SCOPE: "Câu hỏi nằm ngoài phạm vi Dược thư Quốc gia (thuốc dùng cho người).",
    R.DECISION_REASON_UNDERSTANDING_PROVIDER_UNAVAILABLE: "Dịch vụ phân tích câu hỏi tạm thời không khả dụng.",  # noqa: E501
    R.DECISION_REASON_UNDERSTANDING_MALFORMED_OUTPUT: "Không phân tích được câu hỏi; vui lòng diễn đạt lại.",
    R.DECISION_REASON_MISSING_REQUIRED_FIELD: "Cần thêm thông tin (tên thuốc, mục hoặc bệnh) để trả lời.",
    R.DECISION_REASON_CLARIFY_LOOP_EXHAUSTED: "Đã hỏi lại nhiều lần mà chưa đủ thông tin; dừng để tránh trả lời sai.",  # noqa: E501
    R.DECISION_REASON_PARENT_HYDRATION_FAILED: "Không tìm thấy đoạn Dược thư phù hợp để làm bằng chứng.",
    R.DECISION_REASON_MISSING_PROVENANCE: "Bằng chứng thiếu thông tin trang nguồn nên không được dùng.",
    R.DECISION_REASON_VISUAL_VERIFICATION_REQUIRED: "Nội dung là bảng hoặc công thức: vui lòng đối chiếu trang PDF.",  # noqa: E501
    R.DECISION_REASON_REQUEST_BUDGET_EXHAUSTED: "Yêu cầu vượt quá ngân sách xử lý cho phép.",
    R.DECISION_REASON_PROVIDER_UNAVAILABLE: "Dịch vụ sinh câu trả lời tạm thời không khả dụng.",
    R.DECISION_REASON_MALFORMED_OUTPUT: "Câu trả lời sinh ra không hợp lệ nên đã bị loại.",
    R.DECISION_REASON_EVIDENCE_INSUFFICIENT: "Bằng chứng trong Dược thư không đủ để trả lời câu hỏi này.",
    R.DECISION_REASON_UNGROUNDED_NUMBER: "Một con số trong câu trả lời không có trong nguồn trích dẫn.",
    R.DECISION_REASON_INVALID_CITATION: "Trích dẫn không hợp lệ nên câu trả lời bị loại.",
    R.DECISION_REASON_UNCITED_CLAIM: "Có nhận định không kèm trích dẫn nên câu trả lời bị loại.",
    R.DECISION_REASON_UNSUPPORTED_CLAIM: "Có nhận định không được nguồn trích dẫn hỗ trợ.",
    R.DECISION_REASON_INCOMPLETE_ANSWER: "Không tạo được câu trả lời đầy đủ từ bằng chứng.",
    R.DECISION_REASON_INSUFFICIENT_RETRIEVAL_SCORE: "Không có kết quả đủ liên quan trong Dược thư.",
    R.DECISION_REASON_INSUFFICIENT_EVIDENCE: "Không tìm thấy bằng chứng cho khía cạnh này; không có nghĩa là an toàn.",  # noqa: E501
    R.DECISION_REASON_DRUG_NOT_FOUND: "Không tìm thấy thuốc này trong Dược thư.",
    R.DECISION_REASON_AMBIGUOUS_DRUG: "Tên thuốc khớp với nhiều chuyên luận; vui lòng nói rõ thuốc nào.",
    R.DECISION_REASON_SECTION_NOT_FOUND: "Chuyên luận của thuốc này không có mục được hỏi.",
    R.DECISION_REASON_CORPUS_NOT_LOADED: "Chưa nạp dữ liệu Dược thư vào hệ thống.",
    R.DECISION_REASON_SMALLTALK: "Xin chào! Hãy hỏi về một thuốc trong Dược thư Quốc gia.",
}

_KIND_OF: dict[int, int] = {
    R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE: K.DECISION_KIND_ANSWERABLE,
    R.DECISION_REASON_VISUAL_VERIFICATION_REQUIRED: K.DECISION_KIND_VERIFY_PDF,
    R.DECISION_REASON_MISSING_REQUIRED_FIELD: K.DECISION_KIND_CLARIFY,
    R.DECISION_REASON_AMBIGUOUS_DRUG: K.DECISION_KIND_CLARIFY,
}


def kind_for(reason: int) -> int:
    """The decision kind a reason implies (everything not listed abstains)."""
    return _KIND_OF.get(reason, K.DECISION_KIND_ABSTAIN)


def make_decision(
    reason: int, pages: Iterable[pb.SourceRef] = (), detail: str = ""
) -> pb.Decision:
    message = REASON_MESSAGES[reason]
    if detail:
        message = f"{message} ({detail})"
    return pb.Decision(kind=kind_for(reason), reason=reason, message=message, pages=list(pages))  # type: ignore[arg-type]
