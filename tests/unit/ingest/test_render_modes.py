"""The content-stream scan that lets a page's text be read without MuPDF's (costly) style collection: which
fonts are drawn filled and stroked, and every case where it must answer "read it with styles" (None)."""

from __future__ import annotations

import pymupdf
import pytest

from ingest.render_modes import PageFonts, fill_stroke_fonts, scan_modes, span_font_name


def modes(content: bytes) -> dict[str, set[int]] | None:
    scanned = scan_modes(content)
    return None if scanned is None else scanned.modes


def test_each_font_is_seen_with_the_render_modes_it_shows_text_in() -> None:
    content = (b"BT /R 9 Tf 0 Tr 1 0 0 1 50 700 Tm (plain) Tj ET\n"
               b"BT /B 9 Tf 2 Tr 0.3 w 1 0 0 1 50 680 Tm <0041> Tj ET\n"
               b"BT /R 9 Tf 0 Tr 1 0 0 1 50 660 Tm [(a) -20 (b)] TJ ET")
    assert modes(content) == {"R": {0}, "B": {2}}


def test_a_font_set_but_never_shown_counts_for_nothing() -> None:
    # fpdf2 selects the font in one text object and shows text in the next (the mode set before then)
    assert modes(b"BT /F1 7.5 Tf ET\nBT 2 Tr ET\nBT 0 Tr 44 798 Td (x) Tj ET") == {"F1": {0}}


def test_operators_inside_strings_are_text_not_operators() -> None:
    content = b"BT /R 9 Tf 0 Tr 1 0 0 1 50 700 Tm (/B 9 Tf 2 Tr q Q \\(x\\) Tj) Tj ET"
    assert modes(content) == {"R": {0}}


def test_the_graphics_state_stack_restores_font_and_mode() -> None:
    content = b"BT /R 9 Tf 0 Tr ET q BT /B 9 Tf 2 Tr (a) Tj ET Q BT 1 0 0 1 9 9 Tm (b) Tj ET"
    assert modes(content) == {"B": {2}, "R": {0}}


@pytest.mark.parametrize("content", [
    b"BT /R 9 Tf (a (nested) string) Tj ET",  # a string the scan does not tokenise
    b"BI /W 1 /H 1 /BPC 8 /CS /G ID \x00 EI",  # an inline image: binary data
    b"/Span << /ActualText (x) >> BDC BT /R 9 Tf (y) Tj ET EMC",  # text replaced by ActualText
    b"BT /R 9 Tf 1 0 0 1 50 700 Tm (Bold) Tj 0.3 0 Td (Bold) Tj ET",  # printed twice, 0.3 pt apart
    b"BT /R 9 Tf 1 0 0 1 50 700 Tm (Bold) Tj ET "
    b"q 1 0 0 1 0.3 0 cm BT /R 9 Tf 1 0 0 1 50 700 Tm (Bold) Tj ET Q",  # the same, shifted by the CTM
])
def test_what_the_scan_does_not_follow_sends_the_page_to_the_style_collection(content: bytes) -> None:
    assert scan_modes(content) is None


def test_the_same_word_twice_in_a_row_at_different_places_is_not_fake_bold() -> None:
    # justified text drawn word by word: "từ từ" is two words, 20 pt apart
    content = b"BT /R 9 Tf 50 700 Td (tu) Tj ET BT /R 9 Tf 70 700 Td (tu) Tj ET"
    assert modes(content) == {"R": {0}}


def gapless(content: bytes) -> bool | None:
    scanned = scan_modes(content)
    return None if scanned is None else scanned.gapless


@pytest.mark.parametrize("content", [
    # one line per text object, each on its own baseline (how the sample formulary is drawn)
    b"BT /R 9 Tf 1 0 0 1 50 700 Tm (first line) Tj ET BT /R 9 Tf 1 0 0 1 50 688 Tm (second) Tj ET",
    # a bold label and its text on one baseline: the font changes, so MuPDF starts a new span
    b"BT /B 9 Tf 1 0 0 1 50 700 Tm (Label:) Tj ET BT /R 9 Tf 1 0 0 1 80 700 Tm (text) Tj ET",
    b"BT /R 9 Tf 50 700 Td [(no) (numbers)] TJ ET",
    b"BT /R 9 Tf 0 Tc 50 700 Td (a) Tj 0 -12 Td (b) Tj ET",  # character spacing reset, lines apart
    b"q BT /R 9 Tf 1 0 0 1 50 700 Tm (a) Tj ET Q BT /R 9 Tf 1 0 0 1 50 688 Tm (b) Tj ET",  # Q, no cm
    b"BT /R 9 Tf 14 TL 50 700 Td (a) Tj T* (b) Tj ET",  # next line by the leading
    b"BT /R 9 Tf 1 0 0.2 1 50 700 Tm (sheared) Tj 0 -12 Td (italic) Tj ET",  # shear keeps the baseline
    b"BT /R 9 Tf 50 700 Td [(Ke) -20 (ptra) 35 (lon) -95 (e)] TJ ET",  # kerning: under a tenth of the size
    b"BT /R 9 Tf 100 Tz 50 700 Td [(a) -50 (b)] TJ ET",  # no horizontal scaling
])
def test_text_whose_characters_sit_where_the_previous_one_ends_is_gapless(content: bytes) -> None:
    assert gapless(content) is True


@pytest.mark.parametrize("content", [
    # justified text drawn word by word on one baseline: a gap between words may have no space
    b"BT /R 9 Tf 50 700 Td (tri) Tj ET BT /R 9 Tf 70 700 Td (dau) Tj ET",
    b"BT /R 9 Tf 50 700 Td (tri) Tj 3 0 Td (dau) Tj ET",  # the same, in one text object
    b"BT /R 9 Tf 50 700 Td (a) Tj 0 -4 Td (b) Tj ET",  # only 4 pt lower: MuPDF may keep one line
    b"BT /R 9 Tf 50 700 Td [(tri) -400 (dau)] TJ ET",  # a word gap made by a TJ number
    b"BT /R 9 Tf 50 700 Td [(tri) -60 -60 (dau)] TJ ET",  # ... made by two
    b"BT /R 9 Tf 120 Tz 50 700 Td [(a) -50 (b)] TJ ET",  # horizontal scaling widens every move
    b"BT /R 9 Tf 2 Tc 50 700 Td (spaced) Tj ET",  # character spacing
    b"BT /R 9 Tf 50 700 Td 1 2 (a) \" ET",  # the " operator sets character spacing
    b"q 0 1 -1 0 0 0 cm BT /R 9 Tf 50 700 Td (rotated) Tj ET Q",
    b"q 1 0 0 0.5 0 0 cm BT /R 9 Tf 50 700 Td (squeezed) Tj ET Q",
    # a cm then Q between two texts of one font: their baselines are in different coordinates
    b"q 1 0 0 1 0 12 cm BT /R 9 Tf 1 0 0 1 50 700 Tm (a) Tj ET Q BT /R 9 Tf 1 0 0 1 50 688 Tm (b) Tj ET",
    b"BT /R 9 Tf 0 1 -1 0 50 700 Tm (up) Tj 0 -20 Td (again) Tj ET",  # rotated baseline
])
def test_text_that_may_hide_a_word_gap_is_not_gapless(content: bytes) -> None:
    assert gapless(content) is False


def test_span_names_may_be_cut_short_by_pymupdf() -> None:
    fonts = PageFonts(frozenset({"DejaVuSansCondensed-BoldOblique"}),
                      frozenset({"DejaVuSansCondensed-Oblique"}))
    assert fonts.stroked("DejaVuSansCondensed-BoldOblique") is True
    assert fonts.stroked("DejaVuSansCondensed-Oblique") is False
    assert fonts.stroked("DejaVuSansCondensed") is None  # the start of both: could be either
    assert fonts.stroked("DejaVuSansCondensed-Bol") is True
    assert fonts.stroked("Helvetica") is None  # not the page's font
    assert span_font_name("ABCDEF+NotoSerif-Bold") == "NotoSerif-Bold" and span_font_name("Times") == "Times"


def page_with(draw: str) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 100), "Hư cấu", fontname="helv", render_mode=0)
    if draw == "stroked":
        page.insert_text((50, 130), "Đậm giả", fontname="hebo", render_mode=2, border_width=0.03)
    elif draw == "both ways":
        page.insert_text((50, 130), "Đậm giả", fontname="helv", render_mode=2, border_width=0.03)
    elif draw == "annotation":
        page.add_text_annot((50, 150), "ghi chú")
    data = doc.tobytes()
    return pymupdf.open("pdf", data)[0]


def test_a_page_whose_fonts_are_drawn_one_way_each_is_read_without_styles() -> None:
    fonts = fill_stroke_fonts(page_with("stroked"))
    assert fonts is not None
    assert fonts.stroked("Helvetica-Bold") is True and fonts.stroked("Helvetica") is False


@pytest.mark.parametrize("draw", ["both ways", "annotation"])
def test_a_font_drawn_both_ways_or_an_annotation_needs_the_style_collection(draw: str) -> None:
    assert fill_stroke_fonts(page_with(draw)) is None
