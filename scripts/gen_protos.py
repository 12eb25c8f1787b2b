"""Regenerate rag_server/gen from protos/ (python, grpc and mypy-protobuf stubs).

Usage: python scripts/gen_protos.py [--check]
--check regenerates into a temporary folder and fails when rag_server/gen differs.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

import grpc_tools
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
GEN_ROOT = ROOT / "rag_server" / "gen"


def _plugin(name: str) -> str:
    """mypy-protobuf's plugins live next to the running interpreter (a venv need not be on PATH)."""
    candidate = Path(sys.executable).parent / name
    found = candidate if candidate.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: pip install mypy-protobuf")
    return str(found)


def generate(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    # Generated modules import "rag.v1.x_pb2"; make the packages importable under rag_server.gen.
    for pkg in {out_dir / "rag", out_dir / "rag" / "v1"}:
        (pkg / "__init__.py").write_text("")
    for path in (out_dir / "rag" / "v1").glob("*.py*"):
        text = path.read_text()
        text = text.replace("from rag.v1 import", "from rag_server.gen.rag.v1 import")
        text = text.replace("import rag.v1.", "import rag_server.gen.rag.v1.")
        text = text.replace(" rag.v1.", " rag_server.gen.rag.v1.")
        path.write_text(text)
    header = '"""Generated from protos/ by scripts/gen_protos.py; do not edit."""\n'
    (out_dir / "__init__.py").write_text(header)


def _diff(a: Path, b: Path) -> list[str]:
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    out = [f"only in one tree: {n}" for n in cmp.left_only + cmp.right_only]
    out += [f"differs: {n}" for n in cmp.diff_files]
    for sub in cmp.common_dirs:
        out += _diff(a / sub, b / sub)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    opts = parser.parse_args()
    if not opts.check:
        if GEN_ROOT.exists():
            shutil.rmtree(GEN_ROOT)
        generate(GEN_ROOT)
        print(f"generated {GEN_ROOT.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "gen"
        generate(fresh)
        problems = _diff(fresh, GEN_ROOT) if GEN_ROOT.exists() else ["rag_server/gen is missing"]
    if problems:
        print("generated code is stale; run: python scripts/gen_protos.py", file=sys.stderr)
        print("\n".join(problems), file=sys.stderr)
        return 1
    print("generated code is fresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
