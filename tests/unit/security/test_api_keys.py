"""The API key store: keys are high-entropy, stored only as salted hashes in a 0600 file written atomically,
verified in constant time, revocable, and a running server sees every change without a restart."""

from __future__ import annotations

import hmac
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from rag_server.security import keys as keys_module
from rag_server.security.keys import KeySet, KeyStore, KeyStoreError, parse_scopes


def _file_text(store: KeyStore) -> str:
    return store.path.read_text("utf-8")


def test_add_stores_a_salted_hash_never_the_key(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "data")
    record, key = store.add("ward-7", "query,ingest")
    assert key.startswith("frk_") and len(key) >= 60
    assert record.scopes == ("query", "ingest") and record.created_at.endswith("Z")
    text = _file_text(store)
    secret = key[len("frk_") :].split("_", 1)[1]  # the id is hex; the secret may itself contain "_"
    assert key not in text and secret not in text and secret[:12] not in text
    entry = json.loads(text)["keys"][0]
    assert set(entry) == {"name", "id", "scopes", "created_at", "hash_scheme", "salt", "hash"}
    assert entry["hash"] == keys_module.digest(bytes.fromhex(entry["salt"]), key)
    assert len(bytes.fromhex(entry["salt"])) == 16
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert not [p for p in store.path.parent.iterdir() if p.name.endswith(".tmp")]  # no temp file left


def test_two_keys_never_share_a_salt_or_a_hash(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    _, first = store.add("a", "query")
    _, second = store.add("b", "query")
    assert first != second
    a, b = store.records()
    assert a.salt != b.salt and a.hash != b.hash and a.key_id != b.key_id


def test_verify_accepts_the_key_and_refuses_everything_else(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    record, key = store.add("bot", "admin")
    keys = store.current()
    assert keys.enabled
    assert keys.verify(key) == record
    for wrong in ("", "Bearer " + key, key[:-1] + ("A" if key[-1] != "A" else "B"), key + "x", key.upper(),
                  "frk_" + record.key_id + "_" + "A" * 43, "x" * 5000):
        assert keys.verify(wrong) is None, wrong


def test_verify_compares_in_constant_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = KeyStore(tmp_path)
    _, key = store.add("bot", "query")
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys_module.hmac, "compare_digest", spy)
    keys = store.current()
    assert keys.verify(key) is not None
    assert keys.verify("frk_0000000000000000_" + "B" * 43) is None  # unknown id: a dummy comparison
    assert keys.verify("garbage") is None
    assert len(seen) == 3 and all(len(a) == len(b) == 64 for a, b in seen)


def test_revoke_keeps_the_record_and_drops_the_hash(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    _, key = store.add("temp", "query")
    store.add("other", "query")
    revoked = store.revoke("temp")
    assert revoked.revoked and revoked.revoked_at
    entry = next(e for e in json.loads(_file_text(store))["keys"] if e["name"] == "temp")
    assert "hash" not in entry and "salt" not in entry and entry["revoked_at"]
    keys = store.current()
    assert keys.enabled and keys.verify(key) is None
    with pytest.raises(KeyStoreError):
        store.revoke("temp")
    with pytest.raises(KeyStoreError):
        store.revoke("nobody")


def test_revoking_the_last_key_keeps_auth_on(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    store.add("only", "query")
    store.revoke("only")
    assert store.current().enabled, "revoking the last key must not open the server"


def test_names_are_unique_among_live_keys_and_reusable_after_revoke(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    _, old = store.add("ci", "query")
    with pytest.raises(KeyStoreError, match="exists"):
        store.add("ci", "admin")
    store.revoke("ci")
    record, new = store.add("ci", "admin")
    assert [r.name for r in store.records()] == ["ci"] and record.scopes == ("admin",)
    keys = store.current()
    assert keys.verify(old) is None and keys.verify(new) == record


@pytest.mark.parametrize("name", ["", "has space", "-dash-first", "x" * 65, "ă", "a/b"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(KeyStoreError):
        KeyStore(tmp_path).add(name, "query")
    assert not (tmp_path / "keys.json").exists()


def test_scopes_are_canonical_and_admin_implies_all() -> None:
    assert parse_scopes("ingest, QUERY") == ("query", "ingest")
    with pytest.raises(KeyStoreError):
        parse_scopes("query,root")
    with pytest.raises(KeyStoreError):
        parse_scopes(" , ")
    record = keys_module.KeyRecord("x", "0" * 16, ("admin",), "", "00", "0" * 64)
    assert all(record.allows(s) for s in ("query", "ingest", "admin"))
    reader = keys_module.KeyRecord("y", "1" * 16, ("query",), "", "00", "0" * 64)
    assert reader.allows("query") and not reader.allows("ingest") and not reader.allows("admin")


def test_no_file_means_auth_off(tmp_path: Path) -> None:
    assert KeyStore(tmp_path).current() == KeySet()
    assert not KeyStore(tmp_path).current().enabled


def test_a_running_store_sees_adds_and_revokes_without_restart(tmp_path: Path) -> None:
    server_view = KeyStore(tmp_path)
    assert not server_view.current().enabled
    cli = KeyStore(tmp_path)
    _, key = cli.add("late", "query")
    assert server_view.current().verify(key) is not None
    cli.revoke("late")
    assert server_view.current().verify(key) is None
    os.unlink(cli.path)
    assert not server_view.current().enabled


def test_a_corrupt_key_file_fails_closed(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    _, key = store.add("bot", "query")
    store.path.write_text("{not json", "utf-8")
    keys = store.current()
    assert keys.enabled and keys.verify(key) is None
    with pytest.raises(KeyStoreError, match="unusable"):
        store.records()


def test_concurrent_adds_lose_no_key(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            KeyStore(tmp_path).add(f"k{i}", "query")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r.name for r in KeyStore(tmp_path).records()) == sorted(f"k{i}" for i in range(8))
