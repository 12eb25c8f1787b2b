"""`rag-server keys add | list | revoke` (in process): the key alone on add's last line, never again."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from rag_server.cli import main
from rag_server.security.keys import KeyStore


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    code, out, _ = _run(capsys, "keys", "add", "ward-7", "--scopes", "query,ingest", "--data-dir", data)
    assert code == 0
    key = out.rstrip("\n").splitlines()[-1]
    assert key.startswith("frk_") and " " not in key
    assert out.count(key) == 1
    keys_file = tmp_path / "data" / "keys.json"
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert key not in keys_file.read_text("utf-8")
    assert KeyStore(tmp_path / "data").current().verify(key) is not None

    code, out, _ = _run(capsys, "keys", "list", "--data-dir", data)
    assert code == 0 and "ward-7" in out and "query,ingest" in out
    record = json.loads(keys_file.read_text("utf-8"))["keys"][0]
    assert key not in out and record["hash"] not in out and record["salt"] not in out

    code, out, _ = _run(capsys, "keys", "revoke", "ward-7", "--data-dir", data)
    assert code == 0 and "revoked" in out
    assert KeyStore(tmp_path / "data").current().verify(key) is None
    code, out, _ = _run(capsys, "keys", "list", "--data-dir", data)
    assert "ward-7" in out and "Z" in out.splitlines()[1].split()[-1]  # the revocation time


def test_errors_exit_non_zero_and_print_no_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path)
    code, out, err = _run(capsys, "keys", "add", "x", "--scopes", "root", "--data-dir", data)
    assert code == 2 and out == "" and "unknown scope" in err
    assert _run(capsys, "keys", "add", "x", "--data-dir", data)[0] == 0
    code, out, err = _run(capsys, "keys", "add", "x", "--data-dir", data)
    assert code == 2 and out == "" and "exists" in err
    code, _, err = _run(capsys, "keys", "revoke", "nobody", "--data-dir", data)
    assert code == 1 and "no live key" in err


def test_list_without_keys_says_auth_is_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "keys", "list", "--data-dir", str(tmp_path))
    assert code == 0 and "auth is off" in out


def test_data_dir_defaults_to_rag_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "env-data"))
    assert _run(capsys, "keys", "add", "env")[0] == 0
    assert (tmp_path / "env-data" / "keys.json").exists()
