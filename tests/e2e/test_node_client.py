"""clients/node/client.js (@grpc/grpc-js + proto-loader reading protos/) against `rag-server serve`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


def test_ask_streams_progress_blocks_and_one_final(node: str, shared_server: Any) -> None:
    code, docs = run_client(node, shared_server.target, "ask", "chống chỉ định của zelvorin", "node-conv-1")
    assert code == 0, docs
    events = [d["result"] for d in docs]
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "progress" and kinds[-1] == "final" and kinds.count("final") == 1 and "block" in kinds
    final = events[-1]["final"]
    assert final["decision"]["kind"] == "DECISION_KIND_ANSWERABLE"
    assert final["citations"] and all(int(c["source"]["printed_page"]) > 0 for c in final["citations"])
    assert docs[-1]["correlation_id"] == final["correlation_id"]
    code, follow = run_client(node, shared_server.target, "ask", "còn liều dùng thì sao?", "node-conv-1")
    assert code == 0 and follow[-1]["result"]["final"]["frame"]["drug_ids"] == ["zelvorin"]


def test_an_authenticated_call_with_a_scoped_key(node: str, rag_server_process: Any, tmp_path: Path) -> None:
    data = tmp_path / "keyed"
    script = Path(sys.executable).parent / "rag-server"
    added = subprocess.run(
        [str(script), "keys", "add", "node-reader", "--scopes", "query", "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    key = added.stdout.strip().splitlines()[-1]
    server = rag_server_process(data_dir=data)
    code, docs = run_client(node, server.target, "corpus")
    assert code == 1 and docs[0]["error"]["status"] == "UNAUTHENTICATED"
    keyed = {"RAG_API_KEY": key}
    code, docs = run_client(node, server.target, "ask", "chống chỉ định của zelvorin", env=keyed)
    assert code == 0 and docs[-1]["result"]["final"]["decision"]["kind"] == "DECISION_KIND_ANSWERABLE"
    code, docs = run_client(node, server.target, "retrieve", "zelvorin", "chong_chi_dinh",
                            env={"RAG_API_KEY": key})
    assert code == 0 and docs[0]["result"]["evidence"]


def test_retrieve_shows_a_tables_cells_and_the_spans_of_prose_to_read_on_the_page(
    node: str, shared_server: Any
) -> None:
    """The fields added for tables and formulas reach a client that loads the protos at run time."""
    code, docs = run_client(node, shared_server.target, "retrieve", "travoxan", "lieu_luong_va_cach_dung")
    assert code == 0, docs
    result = docs[0]["result"]
    assert result["decision"]["kind"] == "DECISION_KIND_VERIFY_PDF"
    [block] = [e for e in result["evidence"] if e["chunk_kind"] == "CHUNK_KIND_BLOCK"]
    assert block["table_rows"][0]["cells"] == ["Clcr (ml/phút)", "Liều uống"]
    assert block["requires_visual_check"] is True
    [prose] = [e for e in result["evidence"] if e["chunk_kind"] == "CHUNK_KIND_PROSE"]
    assert prose["requires_visual_check"] is False and prose["visual_spans"]
    spans = [prose["text"][s["start"]:s["end"]] for s in prose["visual_spans"]]
    assert any("creatinin huyết thanh" in s for s in spans) and "500 mg mỗi 12 giờ" in prose["text"]
