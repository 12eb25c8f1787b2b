"""Package boundaries: the shared core imports neither the server nor ingest; ingest depends on the core
(and the generated contract for its remote mode), never on the server; no cycles through lazy imports."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ("domain", "text", "vocabulary", "store", "providers", "config", "reasons", "extras", "gen")
SERVER = ("api", "server", "app", "cli", "startup", "retrieval", "understanding", "evaluation",
          "persistence")


def _imports(path: Path) -> list[str]:
    """Every module imported anywhere in the file (lazy imports inside functions included)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def _files(*parts: str) -> list[Path]:
    """The module `parts` (a package folder or, failing that, a .py file)."""
    base = ROOT.joinpath(*parts)
    return sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]


def _offenders(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{p.relative_to(ROOT)} imports {m}"
        for p in files
        for m in _imports(p)
        if any(m == f or m.startswith(f"{f}.") for f in forbidden)
    ]


def test_the_core_imports_neither_the_server_nor_ingest() -> None:
    files = [f for name in CORE for f in _files("rag_server", name)]
    assert len(files) > 20 and all(f.exists() for f in files)
    forbidden = ("ingest", *(f"rag_server.{s}" for s in SERVER))
    assert _offenders(files, forbidden) == []


def test_ingest_depends_on_the_core_only() -> None:
    files = [f for f in _files("ingest") if "fixtures" not in f.parts]
    forbidden = tuple(f"rag_server.{s}" for s in SERVER)
    assert _offenders(files, forbidden) == []


def test_the_check_sees_lazy_imports() -> None:
    # startup.py (server side) loads the sample through ingest inside a function: it must be seen
    assert _offenders(_files("rag_server", "startup"), ("ingest",)) != []


def test_retrieval_and_understanding_never_see_protobuf() -> None:
    files = _files("rag_server", "retrieval") + _files("rag_server", "understanding")
    assert _offenders(files, ("rag_server.gen", "google.protobuf", "grpc")) == []
