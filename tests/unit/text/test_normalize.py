"""Tone placement: the older and the newer spelling of one word are one word."""

from __future__ import annotations

import pytest

from rag_server.text.match import tokenize
from rag_server.text.normalize import newer_tone


@pytest.mark.parametrize(
    ("typed", "read"),
    [("hoá", "hóa"), ("thuỷ", "thủy"), ("khoẻ", "khỏe"), ("hoạ", "họa"), ("hóa", "hóa"), ("quý", "quý"),
     ("toán", "toán"), ("hoàng", "hoàng")],
)
def test_the_older_tone_placement_is_read_as_the_newer(typed: str, read: str) -> None:
    assert newer_tone(typed) == read
    assert tokenize(f"chuyển {typed}")[1].raw == read
