"""The FICTIONAL scale corpus generator: unique invented names, deterministic output, and a PDF that the
real ingestion parses back into the monographs it was built from (no gate failing)."""

from __future__ import annotations

import re
from pathlib import Path

from formulary_fixtures.sample_content import DRUGS
from formulary_fixtures.scale_corpus import (
    generate_names,
    scale_specs,
    substitute,
    vary_numbers,
    write_scale_pdf,
)
from ingest.build import build_chunks
from rag_server.text import slugify


def test_names_are_unique_invented_and_deterministic() -> None:
    names = generate_names(680, seed=7)
    assert len(names) == len(set(n.lower() for n in names)) == 680
    assert names == generate_names(680, seed=7)
    assert names != generate_names(680, seed=8)
    sample = {slugify(re.sub(r"\([^()]*\)", " ", d.title)) for d in DRUGS}
    assert not sample & {n.lower() for n in names}
    assert all(re.fullmatch(r"[A-Z][a-z]{4,13}", n) for n in names)


def test_substitute_renames_the_drug_and_its_neighbours_keeping_case() -> None:
    zelvorin = next(d for d in DRUGS if d.title == "ZELVORIN")
    others = {d.title: f"other{i}" for i, d in enumerate(DRUGS)}
    text = "ZELVORIN và Zelvorin; zelvorin besilat. Keptralon làm giảm nồng độ zelvorin."
    out = substitute(text, zelvorin, "Quaoxacin", others)
    keptralon_to = others["KEPTRALON"]
    assert out == (
        f"QUAOXACIN và Quaoxacin; quaoxacin besilat. {keptralon_to.capitalize()} làm giảm nồng độ quaoxacin."
    )


def test_vary_numbers_scales_doses_but_not_frequencies_or_codes() -> None:
    text = "Liều 2,5 mg đến 10 mg; ADR > 1/100; 1/1 000 < ADR; CYP3A9; 1 000 mg"
    assert vary_numbers(text, 2.0) == "Liều 5 mg đến 20 mg; ADR > 1/100; 1/1 000 < ADR; CYP3A9; 1 000 mg"


def test_specs_recombine_sample_sections_with_a_new_name() -> None:
    specs = scale_specs(12, seed=3)
    assert [s.title for s in specs] == sorted(s.title for s in specs)
    sample_words = {w for d in DRUGS for w in re.sub(r"[()]", " ", d.title).lower().split()} - {"acid"}
    for spec in specs:
        keys = [k for k, _ in spec.sections]
        assert {"chi_dinh", "chong_chi_dinh", "lieu_luong_va_cach_dung"} <= set(keys)
        text = " ".join(str(item) for _, items in spec.sections for item in items).lower()
        assert spec.title.lower() in text
        assert not {w for w in sample_words if re.search(rf"\b{w}\b", text)}, spec.title  # all renamed


def test_small_scale_pdf_is_deterministic_and_ingests_cleanly(tmp_path: Path) -> None:
    first = write_scale_pdf(tmp_path / "a.pdf", monographs=6, seed=11)
    second = write_scale_pdf(tmp_path / "b.pdf", monographs=6, seed=11)
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    assert first.monographs == 6 and first.pages == second.pages > 6
    result = build_chunks(tmp_path / "a.pdf")
    assert [g.name for g in result.gates if g.count] == []
    assert sorted({c.drug_id for c in result.chunks}) == sorted(first.drug_ids)
    assert len(result.chunks) >= 6 * 19  # ~22 chunks a monograph at 800 tokens
