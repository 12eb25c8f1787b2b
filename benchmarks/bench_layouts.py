"""Layout test bench: the same monographs in every layout variant of the second renderer, one table row each
(prints figures; nothing here is asserted anywhere).

    .venv/bin/python benchmarks/bench_layouts.py                     # real monographs (../shared/corpus)
    .venv/bin/python benchmarks/bench_layouts.py --sample            # the FICTIONAL sample
    .venv/bin/python benchmarks/bench_layouts.py G H --corpus DIR    # some variants, another corpus folder

The real corpus is copyrighted: it is read at run time and rendered to a temporary folder only. Per variant
(formulary_fixtures.alt_layouts.VARIANTS): its furniture and tables, pages, monographs found, sections found
whole, sections on exactly their printed pages, chunks citing the right printed pages, table sections lifted
as blocks (+ those only marked for a visual check), folios inferred from neighbours, failed gates and the
build_chunks time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from formulary_fixtures.alt_layouts import VARIANTS, corpus_monographs, run_variant, sample_monographs  # noqa: E402
from formulary_fixtures.alt_render import Variant, run_line  # noqa: E402


def furniture(v: Variant) -> str:
    """'h2+f1' style: lines of running header and footer (distinct rows)."""
    header = len({run_line(item).row for item in v.header})
    footer = len({run_line(item).row for item in v.footer})
    return f"h{header}+f{footer}"


def describe(v: Variant) -> str:
    identity = f", id:{v.identity_table}" if v.identity_table else ""
    return f"{v.family}/{v.columns}col, {furniture(v)}, tbl:{v.table}{identity}"


def ratio(a: int, b: int) -> str:
    return f"{a}/{b}" if b else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", help="variant names (default: all)")
    parser.add_argument("--sample", action="store_true", help="the fictional sample instead of the corpus")
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    args = parser.parse_args()
    names = [n for n in args.variants if n in VARIANTS] or sorted(VARIANTS)
    if args.sample or not args.corpus.is_dir():
        content, monographs = "fictional sample", sample_monographs()
    else:
        content, monographs = f"real monographs ({args.corpus})", corpus_monographs(args.corpus)
    print(f"{len(monographs)} {content} in {len(names)} layout variants\n")
    head = (f"{'var':<4}{'layout':<42}{'pages':>6}{'drugs':>7}{'sections':>10}{'sec.pages':>10}"
            f"{'chunk.pg':>10}{'tables':>8}{'+check':>7}{'inferred':>9}{'s':>6}  failed gates")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory(prefix="bench-layouts-") as tmp:
        for name in names:
            started = time.perf_counter()
            scores, result = run_variant(monographs, name, Path(tmp))
            seconds = time.perf_counter() - started
            gates = ", ".join(g.split(" ")[0] for g in scores.failed_gates) or "none"
            print(f"{name:<4}{describe(VARIANTS[name]):<42}{scores.pages:>6}"
                  f"{ratio(len(scores.monographs_found), len(scores.monographs_expected)):>7}"
                  f"{ratio(scores.sections_found, scores.sections_total):>10}"
                  f"{ratio(scores.section_pages_ok, scores.sections_total):>10}"
                  f"{ratio(scores.chunks_pages_ok, scores.chunks_total):>10}"
                  f"{ratio(scores.tables_lifted, scores.table_sections):>8}{scores.tables_visual:>7}"
                  f"{result.inferred_folios:>9}{seconds:>6.1f}  {gates}")
    print("\nsections: found whole (>= 90% of their words); sec.pages: citing exactly their printed pages;\n"
          "chunk.pg: chunks citing the pages of the words they hold; tables: table sections lifted as\n"
          "blocks; +check: table sections only marked for a visual check; s: render + ingest seconds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
