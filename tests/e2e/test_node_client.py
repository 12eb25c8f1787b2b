"""clients/node/client.js (@grpc/grpc-js + proto-loader reading protos/) against `rag-server serve`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT = REPO_ROOT / "clients" / "node" / "client.js"


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed: the Node client e2e tests need Node.js >= 18")
    grpc_js = [REPO_ROOT / p / "node_modules" / "@grpc" / "grpc-js" for p in ("clients/node", "tools/node")]
    if not any(p.is_dir() for p in grpc_js):
        pytest.fail("@grpc/grpc-js is not installed: run bash scripts/bootstrap.sh (npm ci in tools/node)")
    return found


def run_client(node: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[dict[str, Any]]]:
    proc = subprocess.run(
        [node, str(CLIENT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )
    assert proc.stderr == "", proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_example_lists_drugs_then_retrieves(node: str, shared_server: Any) -> None:
    code, docs = run_client(node, shared_server.target)
    assert code == 0, docs
    listed, retrieved = docs
    assert listed["call"] == "ListDrugs"
    drugs = listed["result"]
    assert drugs and all(d["drug_id"] and d["section_keys"] for d in drugs)
    assert retrieved["call"] == "Retrieve"
    result = retrieved["result"]
    assert result["decision"]["kind"] in ("DECISION_KIND_ANSWERABLE", "DECISION_KIND_VERIFY_PDF")
    assert result["evidence"] and all(e["drug_id"] == drugs[0]["drug_id"] for e in result["evidence"])
    assert retrieved["correlation_id"]


def test_target_from_env(node: str, shared_server: Any) -> None:
    code, docs = run_client(node, "corpus", env={"RAG_TARGET": shared_server.target})
    assert code == 0, docs
    assert docs[0]["call"] == "GetCorpus"
    assert docs[0]["result"]["loaded"] is True


def test_invalid_argument_prints_field_violations(node: str, shared_server: Any) -> None:
    code, docs = run_client(node, shared_server.target, "retrieve", "Not A Slug", "nope")
    assert code == 1
    error = docs[0]["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert {v["field"] for v in error["field_violations"]} == {"drug_id", "section_key"}
    assert error["correlation_id"]


def test_unreachable_server_is_a_json_error(node: str) -> None:
    code, docs = run_client(node, "127.0.0.1:1", "corpus")
    assert code == 1
    assert docs[0]["error"]["status"] == "UNAVAILABLE"
