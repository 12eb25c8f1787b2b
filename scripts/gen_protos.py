"""Regenerate the generated code from protos/ (python, grpc and mypy-protobuf stubs) into both places that
ship it: rag_server/gen (the server) and clients/python/formulary_rag_client/gen (the installable client,
which must not need the server package).

Usage: python scripts/gen_protos.py [--check]
--check regenerates into a temporary folder and fails when either tree differs.
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
# (folder, the Python package the generated modules import each other through)
TARGETS = (
    (ROOT / "rag_server" / "gen", "rag_server.gen"),
    (ROOT / "clients" / "python" / "formulary_rag_client" / "gen", "formulary_rag_client.gen"),
)


def _plugin(name: str) -> str:
    """mypy-protobuf's plugins live next to the running interpreter (a venv need not be on PATH)."""
    candidate = Path(sys.executable).parent / name
    found = candidate if candidate.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found: pip install mypy-protobuf")
    return str(found)


def generate(out_dir: Path, package: str) -> None:
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
    # Generated modules import "rag.v1.x_pb2"; make the packages importable under `package`.
    for pkg in {out_dir / "rag", out_dir / "rag" / "v1"}:
        (pkg / "__init__.py").write_text("")
    for path in (out_dir / "rag" / "v1").glob("*.py*"):
        text = path.read_text()
        text = text.replace("from rag.v1 import", f"from {package}.rag.v1 import")
        text = text.replace("import rag.v1.", f"import {package}.rag.v1.")
        text = text.replace(" rag.v1.", f" {package}.rag.v1.")
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
        for gen_root, package in TARGETS:
            if gen_root.exists():
                shutil.rmtree(gen_root)
            generate(gen_root, package)
            print(f"generated {gen_root.relative_to(ROOT)}")
        return 0
    problems: list[str] = []
    for gen_root, package in TARGETS:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "gen"
            generate(fresh, package)
            where = gen_root.relative_to(ROOT)
            found = _diff(fresh, gen_root) if gen_root.exists() else ["missing"]
            problems += [f"{where}: {p}" for p in found]
    if problems:
        print("generated code is stale; run: python scripts/gen_protos.py", file=sys.stderr)
        print("\n".join(problems), file=sys.stderr)
        return 1
    print("generated code is fresh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
