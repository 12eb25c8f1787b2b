"""Interfaces without concrete-class checks: code outside the factories that build the providers asks a
provider what it can do (protocol attributes and methods: `Ranker.instrument`, `Reranker.local`, ...), never
which class it is. States and kinds are enums (BreakerState, RerankFailure, InputErrorKind), never strings."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rag_server.providers.rerank.breaker import BreakerState, CircuitBreaker

ROOT = Path(__file__).resolve().parents[2]
# the implementations of the service's interfaces (providers, stores, answer parts)
CONCRETE = re.compile(r"(Reranker|Embedder|Store|Judge|Generator|Understander|Converse|Chat|Client)$")


def _class_names(node: ast.expr) -> list[str]:
    """The class names of an isinstance() second argument (a name, a.b, a tuple or a union of them)."""
    return [n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute)]


def _concrete_checks(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or len(node.args) != 2:
            continue
        if node.func.id in ("isinstance", "issubclass"):
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            names = [n for n in _class_names(node.args[1]) if CONCRETE.search(n)]
            found += [f"{where} {node.func.id}(..., {n})" for n in names]
    return found


def test_no_concrete_class_checks_outside_the_factories() -> None:
    offenders = [
        hit
        for base in ("rag_server", "ingest")
        for path in sorted((ROOT / base).rglob("*.py"))
        if path.name != "factory.py" and "gen" not in path.parts and "fixtures" not in path.parts
        for hit in _concrete_checks(path)
    ]
    assert offenders == [], "ask the protocol (an attribute or method), not the class"


def test_ingest_input_errors_are_of_a_kind() -> None:
    from ingest.errors import IngestInputError, InputErrorKind
    from rag_server.api.ingestion import _INPUT_STATUS

    assert set(_INPUT_STATUS) == set(InputErrorKind)  # every kind has its status
    err = IngestInputError(InputErrorKind.ENCRYPTED, "needs a password")
    assert err.kind is InputErrorKind.ENCRYPTED
    assert f"{err.kind}: {err.message}" == "encrypted: needs a password"  # what the CLI and the status say
    assert IngestInputError("corrupt", "x").kind is InputErrorKind.CORRUPT  # the wire spelling still reads
    raised_with_strings = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "ingest").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == "IngestInputError" and node.args and isinstance(node.args[0], ast.Constant)
    ]
    assert raised_with_strings == []


def test_breaker_states_are_an_enum() -> None:
    breaker = CircuitBreaker(1, 60.0, clock=lambda: 0.0)
    assert breaker.state is BreakerState.CLOSED
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN and isinstance(breaker.state, BreakerState)
