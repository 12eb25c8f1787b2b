"""Protobuf stays at the edge: the generated contract (rag_server.gen, google.protobuf) is imported only by
the gRPC layer (rag_server/api), the evaluation client (rag_server/evaluation), the client CLIs and the
transport assembly; persistence, observability, retrieval, understanding, answers, the core and ingestion
work on domain types (the api layer converts)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTOBUF = ("rag_server.gen", "google.protobuf", "google.rpc")
ALLOWED_PACKAGES = ("rag_server/api/", "rag_server/gen/", "rag_server/evaluation/")
ALLOWED_FILES = {
    "rag_server/ask_cli.py",  # `rag-server ask`: a gRPC client
    "ingest/remote.py",  # `ingest --remote`: a gRPC client of IngestionService
    "rag_server/request_errors.py",  # gRPC statuses with google.rpc details, for the api and the gates
}


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def _offenders() -> list[str]:
    found: list[str] = []
    for base in ("rag_server", "ingest"):
        for path in sorted((ROOT / base).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(ALLOWED_PACKAGES) or rel in ALLOWED_FILES or "/fixtures/" in rel:
                continue
            found += [f"{rel} imports {m}" for m in _imports(path)
                      if any(m == p or m.startswith(f"{p}.") for p in PROTOBUF)]
    return found


def test_only_the_edge_imports_the_generated_contract() -> None:
    assert _offenders() == [], "convert at rag_server/api; work on domain types everywhere else"


def test_the_allowed_files_exist() -> None:
    assert all((ROOT / f).exists() for f in ALLOWED_FILES)
    assert all((ROOT / p).is_dir() for p in ALLOWED_PACKAGES)


def test_traces_are_built_from_domain_types() -> None:
    from rag_server.domain import DecisionKind, Reason
    from rag_server.persistence.traces import RetrievalTrace

    trace = RetrievalTrace.of("RetrievalService/Retrieve", "c-1", DecisionKind.ANSWERABLE,
                              Reason.GROUNDED_EVIDENCE_AVAILABLE, "section", drug_ids=["zentavir"])
    assert (trace.decision_kind, trace.decision_reason, trace.route) == (
        "answerable", "grounded_evidence_available", "section")
    assert trace.drug_ids == ["zentavir"] and trace.otel_trace_id == ""
