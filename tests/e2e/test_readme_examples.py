"""Every grpcurl command in README.md runs against a real server and does what the README says."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GRPCURL = Path(sys.executable).parent / "grpcurl"
README_TARGET = "127.0.0.1:50051"


def readme_grpcurl_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("grpcurl "):
                commands.append(line.split("  #", 1)[0].strip())
    return commands


COMMANDS = readme_grpcurl_commands()


def test_readme_has_grpcurl_examples() -> None:
    assert len(COMMANDS) >= 15
    for needle in EXPECTATIONS:  # each semantic check still finds its README example
        assert any(needle in c and " -v " not in c for c in COMMANDS), needle


@pytest.mark.parametrize(
    "command", COMMANDS, ids=[f"{i:02d}-{c.split()[-1]}" for i, c in enumerate(COMMANDS)]
)
def test_readme_grpcurl_example(command: str, shared_server: Any) -> None:
    assert README_TARGET in command
    argv = shlex.split(command.replace(README_TARGET, shared_server.target))
    argv[0] = str(GRPCURL)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    if "Not A Slug" in command:
        assert proc.returncode != 0 and "Code: InvalidArgument" in proc.stderr, proc.stderr
        assert "google.rpc.BadRequest" in proc.stderr
        return
    assert proc.returncode == 0, f"{command}\n{proc.stderr}"
    if " -d " in command and " -v " not in command:
        for doc in _json_documents(proc.stdout):
            assert isinstance(doc, dict)
    if "x-correlation-id: ward-7.req-0042" in command:
        assert "x-correlation-id: ward-7.req-0042" in proc.stdout
    if "IngestionService/Ingest" in command:
        docs = _json_documents(proc.stdout)
        assert "summary" in docs[-1], docs[-1]
        assert not docs[-1]["summary"].get("switched", False)
    for needle, check in EXPECTATIONS.items():
        if needle in command and " -v " not in command:
            check(_json_documents(proc.stdout)[-1])


def _answerable(doc: dict[str, Any]) -> None:
    assert doc["decision"]["kind"] == "DECISION_KIND_ANSWERABLE", doc["decision"]
    assert doc["evidence"] and all(e["source_refs"] for e in doc["evidence"])


def _section(doc: dict[str, Any]) -> None:
    _answerable(doc)
    assert doc["route"] == "ROUTE_SECTION"
    assert {(e["drug_id"], e["section_key"]) for e in doc["evidence"]} == {("zelvorin", "chong_chi_dinh")}


def _overview(doc: dict[str, Any]) -> None:
    _answerable(doc)
    assert {e["drug_id"] for e in doc["evidence"]} == {"zelvorin"}


def _pregnancy(doc: dict[str, Any]) -> None:
    _answerable(doc)
    assert {e["section_key"] for e in doc["evidence"]} == {"thoi_ky_mang_thai"}


def _asked(doc: dict[str, Any]) -> None:
    final = doc["final"]  # the stream's last message
    assert final["decision"]["kind"] == "DECISION_KIND_ANSWERABLE", final["decision"]
    assert final["frame"]["drug_ids"] == ["zelvorin"]  # the follow-up kept the drug of its conversation
    assert final["citations"] and all(c["source"]["printed_page"] > 0 for c in final["citations"])


def _understood(doc: dict[str, Any]) -> None:
    assert doc["frame"]["drug_ids"] == ["zelvorin"]
    assert doc["frame"]["section_key"] == "chong_chi_dinh"


def _indication(doc: dict[str, Any]) -> None:
    assert "zelvorin" in [c["drug_id"] for c in doc["candidates"]], doc


def _assessed(doc: dict[str, Any]) -> None:
    [assessment] = doc["assessments"]
    assert assessment["drug_id"] == "zelvorin"
    assert {"FACET_PREGNANCY", "FACET_INTERACTION"} <= {f["facet"] for f in assessment["facets"]}


def _by_class(doc: dict[str, Any]) -> None:
    [assessment] = doc["assessments"]
    [facet] = [f for f in assessment["facets"] if f["facet"] == "FACET_INTERACTION"]
    assert facet["status"] == "CANDIDATE_STATUS_EVIDENCE_FOUND", facet
    assert "MATCH_KIND_CLASS" in {m["match_kind"] for m in facet["matches"]}, facet["matches"]


def _out_of_scope(doc: dict[str, Any]) -> None:
    assert doc["decision"]["reason"] == "DECISION_REASON_OUT_OF_SCOPE" and not doc.get("evidence"), doc


def _prefix(doc: dict[str, Any]) -> None:
    assert doc["frame"]["drug_ids"] == ["zelvorin"]
    assert doc["frame"]["drug_mentions"][0]["match_kind"] == "MATCH_KIND_PREFIX", doc["frame"]


def _listed(doc: dict[str, Any]) -> None:
    assert {"zelvorin", "keptralon"} <= {d["drug_id"] for d in doc["drugs"]}


def _corpus(doc: dict[str, Any]) -> None:
    assert doc["loaded"] is True and int(doc["manifest"]["monograph_count"]) >= 2


EXPECTATIONS = {
    '"section_key": "chong_chi_dinh"}': _section,
    """{"drug_id": "zelvorin"}'""": _overview,
    "phụ nữ có thai": _pregnancy,
    'chống chỉ định của zelvorin"}': _understood,
    "AnswerService/Ask": _asked,
    "zelv chống chỉ định": _prefix,
    "LookupIndication": _indication,
    '"current_medications": ["keptralon"]': _assessed,
    "furosemide 40mg": _by_class,
    "giá vàng hôm nay": _out_of_scope,
    "ListDrugs": _listed,
    "-d '{}' 127.0.0.1:50051 rag.v1.IngestionService/GetCorpus": _corpus,
}


def _json_documents(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    docs, pos = [], 0
    text = text.strip()
    while pos < len(text):
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return docs
