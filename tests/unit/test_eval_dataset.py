"""Loading and validating evaluation question files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_server.evaluation.dataset import DatasetError, load_questions, parse_question


def write(tmp_path: Path, rows: list[object]) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def test_loads_every_kind_and_normalises_expected_decisions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            {
                "id": "s",
                "kind": "section",
                "query": "zorvatin ccđ",
                "gold_drug_id": "zorvatin",
                "gold_section_key": "chong_chi_dinh",
                "style": ["short"],
            },
            {
                "id": "i",
                "kind": "indication",
                "query": "thuốc nào trị gút?",
                "indication": "gút",
                "gold_drug_ids": ["zorvatin"],
            },
            {"id": "n", "kind": "nonsense_indication", "query": "bệnh rồng", "gold_drug_ids": []},
            {
                "id": "a",
                "kind": "abstain",
                "query": "liều cho chó",
                "expect_decision": "decision_reason_out_of_scope",
            },
            {
                "id": "b",
                "kind": "abstain",
                "query": "xin chào",
                "expect_decision": ["SMALLTALK", "DECISION_KIND_CLARIFY"],
            },
        ],
    )
    qs = load_questions(path, ["chong_chi_dinh"])
    assert [q.kind for q in qs] == ["section", "indication", "nonsense_indication", "abstain", "abstain"]
    assert qs[1].indication_text == "gút"
    assert qs[2].indication_text == "bệnh rồng"  # no phrase given: the query is sent
    assert qs[3].expect_decision == ("OUT_OF_SCOPE",)
    assert qs[4].expect_decision == ("SMALLTALK", "CLARIFY")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "x", "kind": "section", "query": "q", "gold_drug_id": "d"}, "needs gold_drug_id"),
        (
            {"id": "x", "kind": "section", "query": "q", "gold_drug_id": "d", "gold_section_key": "nope"},
            "unknown gold_section_key",
        ),
        ({"id": "x", "kind": "indication", "query": "q"}, "needs gold_drug_ids"),
        ({"id": "x", "kind": "nonsense_indication", "query": "q", "gold_drug_ids": ["d"]}, "no gold drugs"),
        ({"id": "x", "kind": "abstain", "query": "q"}, "needs expect_decision"),
        ({"id": "x", "kind": "guess", "query": "q"}, "kind must be one of"),
        ({"id": "x", "kind": "abstain", "query": "  ", "expect_decision": "CLARIFY"}, "query must be"),
        ({"kind": "abstain", "query": "q"}, "id must be"),
        ({"id": "x", "kind": "abstain", "query": "q", "expect_decision": 3}, "expect_decision must be"),
    ],
)
def test_rejects_malformed_questions(row: dict[str, object], message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        parse_question(row, "line 1", ["chong_chi_dinh"])


def test_rejects_duplicates_bad_json_and_empty_files(tmp_path: Path) -> None:
    row = {"id": "a", "kind": "abstain", "query": "q", "expect_decision": "CLARIFY"}
    with pytest.raises(DatasetError, match="duplicate id"):
        load_questions(write(tmp_path, [row, row]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a",\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.jsonl:1: invalid JSON"):
        load_questions(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no questions"):
        load_questions(empty)
