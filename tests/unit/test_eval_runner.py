"""The eval runner and `rag-server eval` over real gRPC, against a scripted RetrievalService on 127.0.0.1.

The scripted service answers from fixed tables so these tests pin down the runner's plumbing
(request mapping, decision names, error capture, ordering, report/JSON output). The real service is
evaluated in tests/integration/test_eval_*.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from rag_server.cli import main
from rag_server.evaluation.dataset import Question
from rag_server.evaluation.metrics import summarize
from rag_server.evaluation.runner import run_eval, warmup_questions
from rag_server.gen.rag.v1 import common_pb2, retrieval_pb2, retrieval_pb2_grpc

K, R = common_pb2.DecisionKind, common_pb2.DecisionReason
RETRIEVE: dict[str, tuple[str, str, int, int]] = {
    "zorvatin chống chỉ định": (
        "zorvatin",
        "chong_chi_dinh",
        K.DECISION_KIND_ANSWERABLE,
        R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE,
    ),
    "zorvatin bà bầu": (
        "zorvatin",
        "than_trong",
        K.DECISION_KIND_ANSWERABLE,
        R.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE,
    ),
    "liều cho chó": ("", "", K.DECISION_KIND_ABSTAIN, R.DECISION_REASON_OUT_OF_SCOPE),
}
INDICATIONS: dict[str, list[str]] = {"gút": ["zorvatin", "melocrin", "zorvatin"], "bệnh rồng": []}


class ScriptedRetrieval(retrieval_pb2_grpc.RetrievalServiceServicer):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def Retrieve(
        self, request: retrieval_pb2.RetrieveRequest, context: Any
    ) -> retrieval_pb2.RetrieveResponse:
        self.seen.append(f"retrieve:{request.query}")
        if request.query not in RETRIEVE:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown question")
        drug, key, kind, reason = RETRIEVE[request.query]
        evidence = (
            [common_pb2.Evidence(drug_id=drug, section_key=key, chunk_id=f"{drug}__{key}__0")] if drug else []
        )
        return retrieval_pb2.RetrieveResponse(
            decision=common_pb2.Decision(kind=kind, reason=reason),
            evidence=evidence,  # type: ignore[arg-type]
            route=retrieval_pb2.ROUTE_SECTION if drug else retrieval_pb2.ROUTE_NONE,
        )

    def LookupIndication(
        self, request: retrieval_pb2.LookupIndicationRequest, context: Any
    ) -> retrieval_pb2.LookupIndicationResponse:
        self.seen.append(f"indication:{request.indication}")
        ids = INDICATIONS.get(request.indication, [])
        return retrieval_pb2.LookupIndicationResponse(
            candidates=[retrieval_pb2.IndicationCandidate(drug_id=d) for d in ids], match_stage="keyword"
        )

    def ListDrugs(
        self, request: retrieval_pb2.ListDrugsRequest, context: Any
    ) -> retrieval_pb2.ListDrugsResponse:
        return retrieval_pb2.ListDrugsResponse(drugs=[retrieval_pb2.DrugSummary(drug_id="zorvatin")])


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[str, ScriptedRetrieval]]:
    servicer = ScriptedRetrieval()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(0)


QUESTIONS = [
    Question(
        id="s1",
        kind="section",
        query="zorvatin chống chỉ định",
        gold_drug_id="zorvatin",
        gold_section_key="chong_chi_dinh",
        style=("diacritics",),
    ),
    Question(
        id="s2",
        kind="section",
        query="zorvatin bà bầu",
        gold_drug_id="zorvatin",
        gold_section_key="thoi_ky_mang_thai",
        style=("colloquial",),
    ),
    Question(
        id="s3", kind="section", query="not scripted", gold_drug_id="zorvatin", gold_section_key="chi_dinh"
    ),
    Question(
        id="i1",
        kind="indication",
        query="Thuốc nào trị gút?",
        indication="gút",
        gold_drug_ids=("zorvatin", "melocrin"),
    ),
    Question(id="n1", kind="nonsense_indication", query="Thuốc nào trị bệnh rồng?", indication="bệnh rồng"),
    Question(id="a1", kind="abstain", query="liều cho chó", expect_decision=("OUT_OF_SCOPE",)),
]


async def test_run_eval_maps_every_kind_to_the_right_rpc(scripted: tuple[str, ScriptedRetrieval]) -> None:
    target, servicer = scripted
    outcomes = await run_eval(target, QUESTIONS, concurrency=3)
    assert [o.question.id for o in outcomes] == [q.id for q in QUESTIONS]  # input order kept
    by_id = {o.question.id: o for o in outcomes}
    assert (by_id["s1"].got_drug_id, by_id["s1"].got_section_key) == ("zorvatin", "chong_chi_dinh")
    assert (by_id["s1"].decision_kind, by_id["s1"].decision_reason, by_id["s1"].route) == (
        "ANSWERABLE",
        "GROUNDED_EVIDENCE_AVAILABLE",
        "SECTION",
    )
    assert by_id["s3"].error.startswith("INVALID_ARGUMENT")
    assert by_id["i1"].got_drug_ids == ("zorvatin", "melocrin")  # de-duplicated, order kept
    assert by_id["n1"].got_drug_ids == ()
    assert by_id["a1"].decision_reason == "OUT_OF_SCOPE"
    assert "indication:gút" in servicer.seen  # the condition phrase, not the whole question
    report = summarize(outcomes)
    assert (report.section_hit1.correct, report.section_hit1.total) == (1, 3)
    assert report.per_section["thoi_ky_mang_thai"].value == 0.0
    assert report.errors == 1
    assert report.indication_recall == 1.0
    assert report.nonsense_rejection.value == 1.0
    assert report.abstention.value == 1.0


def test_warmup_takes_one_question_of_each_kind_and_a_free_form_one() -> None:
    questions = [
        *QUESTIONS,
        Question(
            id="f1",
            kind="section",
            query="q",
            gold_drug_id="d",
            gold_section_key="chi_dinh",
            style=("free_form",),
        ),
    ]
    assert [q.id for q in warmup_questions(questions)] == ["s1", "i1", "n1", "a1", "f1"]


async def test_run_eval_reports_an_unreachable_target() -> None:
    with pytest.raises(ConnectionError, match="no gRPC server"):
        await run_eval("127.0.0.1:1", QUESTIONS[:1], connect_timeout_s=0.5)


def test_cli_eval_prints_tables_writes_json_and_honours_fail_under(
    scripted: tuple[str, ScriptedRetrieval], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, _ = scripted
    questions = tmp_path / "q.jsonl"
    rows = [
        {
            "id": q.id,
            "kind": q.kind,
            "query": q.query,
            "gold_drug_id": q.gold_drug_id,
            "gold_section_key": q.gold_section_key,
            "gold_drug_ids": list(q.gold_drug_ids),
            "indication": q.indication,
            "style": list(q.style),
            "expect_decision": list(q.expect_decision),
        }
        for q in QUESTIONS
    ]
    questions.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    out = tmp_path / "report.json"
    code = main(["eval", str(questions), "--target", target, "--json", str(out), "--misses", "5"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "section hit@1" in printed and "0.333 (1/3)" in printed
    assert "zorvatin bà bầu" in printed  # a miss is listed with its query
    assert "melocrin" in printed and "not in the served corpus" in printed  # gold drugs not served: warned
    data = json.loads(out.read_text(encoding="utf-8"))["splits"][str(questions)]
    assert data["service"]["section_hit_at_1"]["total"] == 3
    assert data["service"]["nonsense_rejection"]["value"] == 1.0
    assert data["missing_gold_drugs"] == ["melocrin"]
    assert {o["id"] for o in data["outcomes"]} == {q.id for q in QUESTIONS}
    assert main(["eval", str(questions), "--target", target, "--fail-under", "0.9", "--misses", "0"]) == 1
    assert main(["eval", str(tmp_path / "missing.jsonl"), "--target", target]) == 2
