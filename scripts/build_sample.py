"""Write the FICTIONAL sample formulary (NOT medical information) that the server loads on first start:
rag_server/sample/sample-formulary.pdf, package data rendered by formulary_fixtures/sample_formulary.py.

    .venv/bin/python scripts/build_sample.py [--check]

The runtime never runs the renderer: it copies this file. --check exits 1 when the committed PDF differs
from a fresh render (tests/unit/test_sample_pdf.py runs the same check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the renderer is test-only code at the root (formulary_fixtures/), not shipped
    sys.path.insert(0, str(ROOT))
TARGET = ROOT / "rag_server" / "sample" / "sample-formulary.pdf"


def render() -> bytes:
    from formulary_fixtures.sample_formulary import render_sample

    return render_sample().pdf


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    fresh = render()
    if args.check:
        if not TARGET.is_file() or TARGET.read_bytes() != fresh:
            print(f"{TARGET} is stale: python scripts/build_sample.py", file=sys.stderr)
            return 1
        print(f"{TARGET} is up to date")
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_bytes(fresh)
    print(f"wrote {TARGET} ({len(fresh)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
