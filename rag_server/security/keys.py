"""API keys, stored hashed in `<data-dir>/keys.json`.

A key is `frk_<id>_<secret>`: `id` is 16 random hex digits that find the record without trying every hash,
`secret` is 32 random bytes (256 bits, url-safe base64). The file keeps, per key, its name, scopes,
creation time, a random 16-byte salt and `sha256(salt || key)`; never the key itself. A salted fast hash
is enough for a key of 256 random bits (nothing to guess, unlike a password), and it keeps the check off
the critical path of every call (scrypt would cost milliseconds per call). The digest is compared with
`hmac.compare_digest` (constant time), and an unknown id is checked against a dummy record so a refusal
takes the same work either way.

The file is written atomically (a 0600 temporary file in the same folder, fsync, rename) under an
exclusive lock (`.keys.lock`), so two `rag-server keys` commands never lose each other's key. A running
server re-reads it when its mtime, size or inode change (`KeyStore.current`): adding or revoking a key needs
no restart. A revoked key keeps its record (name, scopes, dates) without its hash: auth stays on while the
file holds any record, so revoking the last key never opens the server (delete the file to turn auth off).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger("rag_server.security")

KEYS_FILE = "keys.json"
LOCK_FILE = ".keys.lock"
FORMAT_VERSION = 1
HASH_SCHEME = "sha256-salted"
KEY_PREFIX = "frk_"
ID_HEX = 16
SECRET_BYTES = 32
SCOPES = ("query", "ingest", "admin")  # admin implies every scope
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_KEY_PATTERN = re.compile(rf"^{KEY_PREFIX}([0-9a-f]{{{ID_HEX}}})_([A-Za-z0-9_-]{{43}})$")
_DUMMY_SALT = secrets.token_bytes(16)
_DUMMY_DIGEST = hashlib.sha256(_DUMMY_SALT + b"no key has this digest").hexdigest()


class KeyStoreError(Exception):
    """A request the key store refuses (bad name or scope, a duplicate, an unreadable file)."""


def keys_path(data_dir: Path) -> Path:
    return data_dir / KEYS_FILE


def digest(salt: bytes, key: str) -> str:
    return hashlib.sha256(salt + key.encode("utf-8")).hexdigest()


def new_key() -> tuple[str, str]:
    """(id, key): a fresh high-entropy key and the id it starts with."""
    key_id = secrets.token_hex(ID_HEX // 2)
    return key_id, f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(SECRET_BYTES)}"


def parse_scopes(text: str | Sequence[str]) -> tuple[str, ...]:
    """'query,ingest' (or a list) -> the scopes in canonical order; unknown or no scope -> KeyStoreError."""
    items = text.split(",") if isinstance(text, str) else list(text)
    wanted = {s.strip().lower() for s in items if s.strip()}
    unknown = sorted(wanted - set(SCOPES))
    if unknown:
        raise KeyStoreError(f"unknown scope(s) {', '.join(unknown)}: choose from {', '.join(SCOPES)}")
    if not wanted:
        raise KeyStoreError(f"a key needs at least one scope ({', '.join(SCOPES)})")
    return tuple(s for s in SCOPES if s in wanted)


@dataclass(frozen=True)
class KeyRecord:
    """One key as stored: everything but the key."""

    name: str
    key_id: str
    scopes: tuple[str, ...]
    created_at: str
    salt: str = ""  # hex; empty once revoked
    hash: str = ""  # hex sha256(salt || key); empty once revoked
    revoked_at: str = ""

    @property
    def revoked(self) -> bool:
        return bool(self.revoked_at) or not self.hash

    def allows(self, scope: str) -> bool:
        return "admin" in self.scopes or scope in self.scopes

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "id": self.key_id,
            "scopes": list(self.scopes),
            "created_at": self.created_at,
        }
        if self.revoked:
            out["revoked_at"] = self.revoked_at
        else:
            out.update({"hash_scheme": HASH_SCHEME, "salt": self.salt, "hash": self.hash})
        return out

    @classmethod
    def from_json(cls, data: Any) -> KeyRecord:
        if not isinstance(data, dict):
            raise KeyStoreError("a key record is not an object")
        name, key_id = data.get("name"), data.get("id")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise KeyStoreError("a key record has no valid name")
        if not isinstance(key_id, str) or not re.fullmatch(rf"[0-9a-f]{{{ID_HEX}}}", key_id):
            raise KeyStoreError(f"key {name!r} has no valid id")
        scopes = parse_scopes(data.get("scopes") or [])
        revoked_at = str(data.get("revoked_at") or "")
        salt, hashed = str(data.get("salt") or ""), str(data.get("hash") or "")
        if not revoked_at and (data.get("hash_scheme") != HASH_SCHEME or not salt or len(hashed) != 64):
            raise KeyStoreError(f"key {name!r} has no usable {HASH_SCHEME} hash")
        return cls(name, key_id, scopes, str(data.get("created_at") or ""), salt, hashed, revoked_at)


@dataclass(frozen=True)
class KeySet:
    """The keys of one version of the file. `enabled`: auth is on (the file holds at least one record, or
    could not be read: then every key is refused rather than every caller admitted)."""

    records: tuple[KeyRecord, ...] = ()
    enabled: bool = False
    _by_id: dict[str, KeyRecord] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, records: Sequence[KeyRecord], enabled: bool | None = None) -> KeySet:
        by_id = {r.key_id: r for r in records if not r.revoked}
        return cls(tuple(records), bool(records) if enabled is None else enabled, by_id)

    def verify(self, key: str) -> KeyRecord | None:
        """The live record `key` belongs to, or None. The stored digest is compared in constant time; an
        unknown or malformed key costs the same hash and comparison against a dummy digest."""
        match = _KEY_PATTERN.fullmatch(key) if len(key) < 256 else None
        record = self._by_id.get(match.group(1)) if match else None
        if record is not None:
            salt, expected = bytes.fromhex(record.salt), record.hash
        else:
            salt, expected = _DUMMY_SALT, _DUMMY_DIGEST
        same = hmac.compare_digest(digest(salt, key).encode("ascii"), expected.encode("ascii"))
        return record if same and record is not None else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse(raw: bytes) -> list[KeyRecord]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KeyStoreError(f"not JSON ({exc.__class__.__name__})") from None
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise KeyStoreError(f"not a version-{FORMAT_VERSION} key file")
    keys = data.get("keys")
    if not isinstance(keys, list):
        raise KeyStoreError("no 'keys' list")
    records = [KeyRecord.from_json(item) for item in keys]
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise KeyStoreError("a name appears twice")
    return records


class KeyStore:
    """`<data-dir>/keys.json`: read by the server on change (`current`), written by `rag-server keys`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = keys_path(data_dir)
        self._signature: tuple[int, int, int] | None = None
        self._current = KeySet()

    # --- the server side: what is the key set now ----------------------------------------------------

    def current(self) -> KeySet:
        """The key set of the file as it is now: one stat per call, a re-read only when it changed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._signature is not None:
                log.warning("API keys: %s is gone: auth is off", self.path)
            self._signature, self._current = None, KeySet()
            return self._current
        except OSError as exc:
            return self._unreadable(None, f"cannot stat it ({exc.strerror})")
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        if signature != self._signature:
            self._reload(signature, st.st_mode)
        return self._current

    def _reload(self, signature: tuple[int, int, int], mode: int) -> None:
        try:
            records = _parse(self.path.read_bytes())
        except FileNotFoundError:
            self._signature, self._current = None, KeySet()
            return
        except OSError as exc:
            self._unreadable(signature, f"cannot read it ({exc.strerror})")
            return
        except KeyStoreError as exc:
            self._unreadable(signature, str(exc))
            return
        if mode & 0o077:
            log.warning("API keys: %s is readable by others (mode %o): chmod 600 it", self.path, mode & 0o777)
        self._signature, self._current = signature, KeySet.of(records)
        live = sum(not r.revoked for r in records)
        log.info("API keys: %d live, %d revoked (%s): auth %s", live, len(records) - live, self.path,
                 "on" if self._current.enabled else "off")

    def _unreadable(self, signature: tuple[int, int, int] | None, why: str) -> KeySet:
        """Fail closed: auth on, every key refused, until the file is fixed (logged once per version)."""
        if signature is None or signature != self._signature:
            log.error("API keys: %s is unusable (%s): every call needing a key is refused", self.path, why)
        self._signature, self._current = signature, KeySet.of((), enabled=True)
        return self._current

    # --- the command line side: read, change, write back atomically ---------------------------------

    def records(self) -> list[KeyRecord]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return _parse(raw)
        except KeyStoreError as exc:
            raise KeyStoreError(f"{self.path} is unusable: {exc}") from None

    def add(self, name: str, scopes: str | Sequence[str]) -> tuple[KeyRecord, str]:
        """A new key named `name`: (its record, the key itself, shown to the caller once)."""
        if not NAME_PATTERN.fullmatch(name):
            raise KeyStoreError(f"bad key name {name!r}: 1-64 letters, digits, '.', '_' or '-'")
        wanted = parse_scopes(scopes)
        with self._locked():
            records = self.records()
            if any(r.name == name and not r.revoked for r in records):
                raise KeyStoreError(f"a live key named {name!r} exists: revoke it first or pick another name")
            key_id, key = new_key()
            while any(r.key_id == key_id for r in records):  # pragma: no cover - 64 random bits
                key_id, key = new_key()
            salt = secrets.token_bytes(16)
            record = KeyRecord(name, key_id, wanted, _now(), salt.hex(), digest(salt, key))
            self._write([*(r for r in records if r.name != name), record])
        return record, key

    def revoke(self, name: str) -> KeyRecord:
        """Drop the hash of the live key `name` (its record stays, marked revoked)."""
        with self._locked():
            records = self.records()
            found = next((r for r in records if r.name == name), None)
            if found is None or found.revoked:
                raise KeyStoreError(f"no live key named {name!r}")
            revoked = replace(found, salt="", hash="", revoked_at=_now())
            self._write([revoked if r.name == name else r for r in records])
        return revoked

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _write(self, records: Sequence[KeyRecord]) -> None:
        body = json.dumps({"version": FORMAT_VERSION, "keys": [r.to_json() for r in records]}, indent=2)
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(body + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)  # whatever the umask
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.data_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
