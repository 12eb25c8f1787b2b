"""A kind of an effect carries the effect: the segmenter glues "Phù cổ chân" into one word, so the one
syllable "phù" never matches inside it, and the term group (clinical.toml [[term]]) lists the kinds
(fictional sentences; NOT medical information)."""

from __future__ import annotations

from rag_server.text.carry import carries
from rag_server.vocabulary.language import load_language


def test_edema_is_carried_by_a_kind_of_edema_and_never_by_phu_hop() -> None:
    forms = [f.text for f in load_language().forms_of[("sung", "phu")]]
    assert carries("Hay gặp: Phù cổ chân, chóng mặt, đỏ bừng mặt.", forms)
    assert not carries("Liều phải phù hợp cho từng người bệnh.", forms)
