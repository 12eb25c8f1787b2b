"""Grounding, deterministic and always on (seed 003): every claim cites at least one evidence block, every
citation points inside the evidence, every number of a claim (with its unit, when it has one) appears in
a cited block. The first failure names the reason: uncited_claim, invalid_citation, ungrounded_number.

Numbers are compared as written, a decimal comma and point alike ("2,5 mg" is "2.5 mg"), with the space
before a unit ignored ("5mg" is "5 mg"); a number in a claim is grounded only by the same number with the
same unit in one of the blocks that claim cites, never by another block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from rag_server.answer.model import Draft, EvidenceBlock
from rag_server.domain import Reason

UNITS = (
    "mg/kg/ngày", "mg/kg/giờ", "mg/kg", "mg/m2", "mg/ngày", "mg/lần", "mg/ml", "ml/phút", "ml/kg",
    "microgam/kg",
    "microgam", "mcg", "µg", "μg", "mg", "g", "kg", "ml", "lít", "l", "mmol/l", "mmol", "meq", "mmhg", "ui",
    "iu", "đơn vị", "%", "giờ", "ngày", "tuần", "tháng", "năm", "tuổi", "lần", "viên", "ống", "gói", "phút",
    "giọt", "liều", "nhát", "h",
)
_UNIT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_NUMBER = re.compile(
    rf"(?<![\w.,])(\d+(?:[.,]\d+)*)(?:\s*({_UNIT})(?![\w/]))?", re.IGNORECASE
)


@dataclass(frozen=True)
class Quantity:
    value: str  # digits, "." as the decimal separator
    unit: str  # lower case, "" when none follows

    def __str__(self) -> str:
        return f"{self.value} {self.unit}".strip()


@lru_cache(maxsize=1024)
def quantities(text: str) -> tuple[Quantity, ...]:
    """Every number of `text` with the unit right after it ("" when none); cached, as every claim of an
    answer is checked against the same few chunks."""
    return tuple(
        Quantity(m.group(1).replace(",", "."), (m.group(2) or "").lower()) for m in _NUMBER.finditer(text)
    )


def _grounded(q: Quantity, cited: Sequence[Quantity]) -> bool:
    if q.unit:
        return any(c.value == q.value and c.unit == q.unit for c in cited)
    return any(c.value == q.value for c in cited)


@dataclass(frozen=True)
class GroundingFailure:
    reason: Reason
    claim_index: int
    detail: str


def verify(draft: Draft, evidence: Sequence[EvidenceBlock]) -> GroundingFailure | None:
    """None when every claim is cited, every citation valid and every number grounded."""
    count = len(evidence)
    for i, claim in enumerate(draft.claims):
        if not claim.sources:
            return GroundingFailure(Reason.UNCITED_CLAIM, i, claim.text[:80])
        bad = [s for s in claim.sources if not 1 <= s <= count]
        if bad:
            return GroundingFailure(Reason.INVALID_CITATION, i, f"[{bad[0]}] of {count} blocks")
        cited = [q for s in claim.sources for q in quantities(evidence[s - 1].chunk.text)]
        for q in quantities(claim.text):
            if not _grounded(q, cited):
                return GroundingFailure(Reason.UNGROUNDED_NUMBER, i, str(q))
    return None
