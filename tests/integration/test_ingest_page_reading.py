"""Reading pages fast gives what reading them as before gives, on FICTIONAL documents (NOT medical
information): the text read without MuPDF's style collection (ingest.render_modes decides when that is
safe) equals the text read with it, piece by piece, on the sample and on every alternative layout (one of
which draws bold as regular text filled and stroked), and so does the text of gapless pages read without
character boxes (two layouts justify word by word: none of their pages is); text printed twice falls back
to the style collection;
and a pool of processes reading the pages gives the same BuildResult as reading them one by one."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pymupdf
import pytest

from formulary_fixtures.alt_layouts import VARIANTS, render_variant, sample_monographs
from formulary_fixtures.alt_render import find_family
from formulary_fixtures.sample_formulary import render_sample
from ingest import page_pool
from ingest.build import build_chunks
from ingest.page_pool import MIN_PAGES, PagePool, PdfFile, task_ranges
from ingest.page_text import STYLED_FLAGS, _pieces, page_lines
from ingest.parse import RawPage, read_pages, read_range
from ingest.render_modes import fill_stroke_fonts

pytestmark = pytest.mark.integration


def styled(page: pymupdf.Page, number: int) -> list[tuple[str, tuple[float, ...], list[tuple[object, ...]]]]:
    """The pieces as the style collection reads them (the way every page was read before)."""
    words: list[object] = []
    lines = _pieces(page.get_text("rawdict", flags=STYLED_FLAGS), number, words, None)  # type: ignore[arg-type]
    return [(ln.text, ln.bbox, [tuple(s) for s in ln.spans]) for ln in lines]


def read_both_ways(pdf: bytes) -> tuple[int, int, int]:
    """(pages, pages read without the style collection, pages read without character boxes); asserts
    every way agrees on every page."""
    doc = pymupdf.open("pdf", pdf)
    fast = gapless = 0
    for index, page in enumerate(doc):
        lines, _ = page_lines(page, index + 1, True)  # with the words: every character's box
        got = [(ln.text, ln.bbox, [tuple(s) for s in ln.spans]) for ln in lines]
        assert got == styled(page, index + 1), f"page {index + 1}"
        quick, _ = page_lines(page, index + 1, False)  # gapless pages: the spans' text only
        assert [(ln.text, ln.bbox, [tuple(s) for s in ln.spans]) for ln in quick] == got, f"page {index + 1}"
        fonts = fill_stroke_fonts(page)
        fast += fonts is not None
        gapless += fonts is not None and fonts.gapless
    return doc.page_count, fast, gapless


def test_the_sample_is_read_without_the_style_collection_and_the_same() -> None:
    pages, fast, gapless = read_both_ways(render_sample().pdf)
    assert fast == pages  # bold drawn filled and stroked in bold fonts: the scan knows it
    assert gapless >= pages // 2  # one line per text object: most pages need no character boxes


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_layout_reads_the_same_either_way(name: str) -> None:
    if find_family("serif") is None:
        pytest.skip("no TrueType family with Vietnamese glyphs (install fonts-dejavu-core)")
    pages, fast, gapless = read_both_ways(render_variant(sample_monographs(), name).pdf)
    if VARIANTS[name].fake_bold:
        assert fast < pages  # the regular face drawn both ways: those pages need the style collection
    else:
        assert fast == pages
    if VARIANTS[name].justify:
        assert gapless == 0  # justified word by word: a word gap may hide in a span, every box is read


def test_text_printed_twice_is_merged_as_before() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 100), "Lieu dung (fictional)", fontname="helv")  # base-14 font: ASCII only
    page.insert_text((50, 140), "Chong chi dinh", fontname="helv")
    page.insert_text((50, 200), "Than trong", fontname="helv")
    page.insert_text((50.3, 140), "Chong chi dinh", fontname="helv")  # printed again: fake bold
    reread = pymupdf.open("pdf", doc.tobytes())
    lines, _ = page_lines(reread[0], 1, False)
    assert [ln.text for ln in lines].count("Chong chi dinh") == 1
    assert [(ln.text, ln.bbox) for ln in lines] == [(t, b) for t, b, _ in styled(reread[0], 1)]


def test_kerned_text_is_gapless_and_reads_the_same_without_character_boxes() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 100), "x", fontname="helv")  # a content stream and the base-14 font resource
    doc.update_stream(page.get_contents()[0], (
        b"BT /helv 11 Tf 1 0 0 1 50 700 Tm [(Keptr) -20 (alon) 30 (e tab) -60 (lets)] TJ ET\n"
        b"BT /helv 11 Tf 1 0 0 1 50 680 Tm [(Chong) 15 ( chi) -45 ( dinh)] TJ ET\n"))
    kerned = pymupdf.open("pdf", doc.tobytes())[0]
    fonts = fill_stroke_fonts(kerned)
    assert fonts is not None and fonts.gapless
    quick, _ = page_lines(kerned, 1, False)
    boxed, _ = page_lines(kerned, 1, True)
    assert [(ln.text, ln.bbox) for ln in quick] == [(ln.text, ln.bbox) for ln in boxed]
    assert [ln.text for ln in quick] == ["Keptralone tablets", "Chong chi dinh"]


@pytest.fixture(scope="module")
def long_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from formulary_fixtures import scale_corpus

    pdf = tmp_path_factory.mktemp("pool") / "scale.pdf"
    scale_corpus.write_scale_pdf(pdf, monographs=28, seed=7)
    assert pymupdf.open(pdf).page_count >= MIN_PAGES
    return pdf


def test_a_pool_of_processes_reads_the_pages_as_one_process_does(long_pdf: Path) -> None:
    pool = PagePool(PdfFile.of(long_pdf), 2)
    doc = pymupdf.open(long_pdf)
    events: list[tuple[int, int]] = []
    read_here: list[tuple[int, int]] = []

    def here(first: int, last: int) -> list[RawPage]:
        read_here.append((first, last))
        return read_range(doc, first, last)

    pooled = pool.read(doc.page_count, here, lambda done, total: events.append((done, total)))
    assert pooled is not None, "the pool declined: worker processes could not read the pages"
    assert pooled == read_pages(doc)
    assert events[-1] == (doc.page_count, doc.page_count) and len(events) > 1
    assert read_here and read_here[0][0] == 0  # this process starts at once, on the first pages


def test_a_worker_that_never_gets_ready_leaves_its_share_here(long_pdf: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page_pool._Worker, "ready", lambda self: False)  # e.g. still importing
    doc = pymupdf.open(long_pdf)
    pooled = PagePool(PdfFile.of(long_pdf), 2).read(doc.page_count, lambda a, b: read_range(doc, a, b))
    assert pooled == read_pages(doc)


def test_build_chunks_is_the_same_whatever_reads_the_pages(long_pdf: Path) -> None:
    alone = build_chunks(long_pdf, workers=1)
    pooled = build_chunks(long_pdf, workers=2)
    assert alone.gates_ok and alone.monograph_count == 28
    assert dataclasses.asdict(pooled) == dataclasses.asdict(alone)


def test_a_file_changed_since_it_was_hashed_is_not_read_by_workers(long_pdf: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "copy.pdf"
    copy.write_bytes(long_pdf.read_bytes())
    source = PdfFile.of(copy)
    copy.write_bytes(long_pdf.read_bytes() + b"\n% changed\n")
    assert not source.unchanged()
    doc = pymupdf.open(long_pdf)  # the bytes that were hashed
    worker_ready = threading.Event()
    ready = page_pool._Worker.ready

    def ready_and_say(worker: page_pool._Worker) -> bool:
        answer = ready(worker)
        worker_ready.set()
        return answer

    monkeypatch.setattr(page_pool._Worker, "ready", ready_and_say)
    read_here: list[int] = []

    def here(first: int, last: int) -> list[RawPage]:  # waits until the worker asks for a range
        read_here.append(first)
        assert worker_ready.wait(60), "the page worker never got ready"
        time.sleep(0.05)  # (it takes the next range as soon as it is ready)
        return read_range(doc, first, last)

    pooled = PagePool(source, 2).read(doc.page_count, here)
    assert pooled is None  # the worker refused the changed file: the caller reads every page itself
    assert len(read_here) < len(task_ranges(doc.page_count, 2))
