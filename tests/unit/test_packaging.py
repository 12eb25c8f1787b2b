"""Packaging: pins agree, the lock covers them, provider SDKs are extras, the client stands alone."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^;\s]+)")


def _pins(requirements: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for requirement in requirements:
        m = PIN.match(requirement)
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def _project(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text("utf-8"))["project"]  # type: ignore[no-any-return]


def _all_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for path in (ROOT / "pyproject.toml", ROOT / "clients/python/pyproject.toml"):
        project = _project(path)
        requirements = list(project["dependencies"])  # type: ignore[call-overload]
        for extra in project.get("optional-dependencies", {}).values():  # type: ignore[attr-defined]
            requirements += extra
        for name, version in _pins(requirements).items():
            assert pins.setdefault(name, version) == version, f"{name} is pinned twice differently"
    return pins


def test_the_grpc_family_moves_together() -> None:
    family = {n: v for n, v in _all_pins().items() if n.startswith("grpcio")}
    assert len(family) >= 5 and len(set(family.values())) == 1, family


def test_every_pin_is_in_the_lock_at_its_version() -> None:
    lock = _pins((ROOT / "requirements.lock").read_text("utf-8").splitlines())
    for name, version in _all_pins().items():
        assert lock.get(name) == version, f"{name}=={version} but the lock has {lock.get(name)}"


def test_provider_sdks_are_extras_and_test_tools_stay_out_of_the_runtime() -> None:
    project = _project(ROOT / "pyproject.toml")
    runtime = set(_pins(list(project["dependencies"])))  # type: ignore[call-overload]
    extras = project["optional-dependencies"]
    assert not runtime & {"cohere", "boto3", "asyncpg", "qdrant-client", "fpdf2", "grpcio-tools"}
    for extra in ("cohere", "bedrock", "postgres", "qdrant"):
        assert extras[extra], extra  # type: ignore[index]


def test_the_client_package_imports_nothing_of_the_server() -> None:
    for path in (ROOT / "clients/python").rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            assert not [n for n in names if n.split(".")[0] in {"rag_server", "ingest"}], path
    # installed (the set-up script installs it), it imports from its own package, not from the checkout
    probe = "import sys, formulary_rag_client as c; print(c.__file__, 'rag_server' in sys.modules)"
    out = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True,
                         cwd="/")
    where, server_loaded = out.stdout.split()
    assert Path(where).is_relative_to(ROOT / "clients/python") and server_loaded == "False"



def test_the_test_fixtures_stay_out_of_the_wheel() -> None:
    from fnmatch import fnmatch

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]
    include = tool["setuptools"]["packages"]["find"]["include"]
    assert (ROOT / "formulary_fixtures" / "__init__.py").is_file()
    assert not (ROOT / "ingest" / "fixtures").exists()
    assert not any(fnmatch("formulary_fixtures", pattern) for pattern in include)
    assert all(fnmatch("rag_server", p) or fnmatch("ingest", p) for p in include)
    # what the renderers need is a test extra, never a runtime dependency
    project = _project(ROOT / "pyproject.toml")
    test_extra = _pins(project["optional-dependencies"]["test"])  # type: ignore[index]
    assert "fpdf2" in test_extra and "fpdf2" not in _pins(list(project["dependencies"]))  # type: ignore[call-overload]


def test_the_set_up_installs_the_test_extra() -> None:
    # a clean clone's `bash .ci/run` needs pytest, fpdf2, ... : bootstrap installs the package with [test]
    # and fails when a requirement of that extra is missing from the environment
    script = (ROOT / "scripts" / "bootstrap.sh").read_text("utf-8")
    assert '-e "$ROOT[test]"' in script and "scripts/check_extra.py" in script
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_extra.py"), "test"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
