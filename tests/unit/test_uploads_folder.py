"""The uploads folder's accounting (quota) and retention, on a real folder."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import pytest

from rag_server.api.uploads import UploadsFolder
from rag_server.request_errors import RequestError


def _write(folder: Path, name: str, size: int, age_s: float = 0.0, now: float = 1_000_000.0) -> Path:
    path = folder / name
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age_s, now - age_s))
    return path


def test_reservations_count_against_the_quota_and_are_given_back(tmp_path: Path) -> None:
    _write(tmp_path, "aaaaaaaaaaaaaaaa.pdf", 400)
    folder = UploadsFolder(tmp_path, max_total_bytes=1000, max_age_s=60)
    assert folder.measure() == 400
    part = tmp_path / ".upload-1.part"
    folder.begin(part)
    folder.reserve(part, 500)
    part.write_bytes(b"y" * 500)
    other = tmp_path / ".upload-2.part"
    folder.begin(other)
    with pytest.raises(RequestError) as info:
        folder.reserve(other, 200)  # 400 + 500 + 200 > 1000: concurrent uploads share the quota
    assert info.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert info.value.quota and info.value.quota[0][0] == "uploads"
    assert folder.measure() == 900  # a part being written counts what it reserved
    folder.abort(other)
    folder.abort(part)  # failed: removed and given back
    assert not part.exists() and folder.used_bytes == 400
    with pytest.raises(RequestError):
        folder.check_room(601)
    folder.check_room(600)


def test_a_committed_upload_replacing_an_identical_one_is_counted_once(tmp_path: Path) -> None:
    final = _write(tmp_path, "bbbbbbbbbbbbbbbb.pdf", 300)
    folder = UploadsFolder(tmp_path, max_total_bytes=10_000, max_age_s=60)
    folder.measure()
    part = tmp_path / ".upload-3.part"
    folder.begin(part)
    folder.reserve(part, 300)
    part.write_bytes(b"z" * 300)
    folder.commit(part, final)
    folder.abort(part)  # the plumbing's finally: a no-op once committed
    assert folder.used_bytes == 300 == folder.measure() and final.exists()
    assert folder.discard(final) and folder.used_bytes == 0 and not final.exists()


def test_discard_removes_only_uploads(tmp_path: Path) -> None:
    uploads, root = tmp_path / "uploads", tmp_path / "root"
    uploads.mkdir()
    root.mkdir()
    outside = _write(root, "book.pdf", 10)
    folder = UploadsFolder(uploads, max_total_bytes=10_000, max_age_s=60)
    assert folder.discard(outside) is False and outside.exists()  # a PDF of an ingest root stays


def test_the_sweep_removes_old_uploads_but_not_those_in_use(tmp_path: Path) -> None:
    now = 1_000_000.0
    old = _write(tmp_path, "cccccccccccccccc.pdf", 10, age_s=120)
    held = _write(tmp_path, "dddddddddddddddd.pdf", 10, age_s=120)
    writing = _write(tmp_path, ".upload-4.part", 10, age_s=120)
    stale = _write(tmp_path, ".upload-5.part", 10, age_s=120)
    fresh = _write(tmp_path, "eeeeeeeeeeeeeeee.pdf", 10, age_s=5)
    folder = UploadsFolder(tmp_path, max_total_bytes=10_000, max_age_s=60, clock=lambda: now)
    folder.begin(writing)
    with folder.hold(held.resolve()):
        removed = folder.sweep()
    assert sorted(removed) == sorted([old.name, stale.name])
    assert held.exists() and writing.exists() and fresh.exists()
    assert folder.sweep_interval_s == 30
    assert UploadsFolder(tmp_path, 1, 86400).sweep_interval_s == 3600


def test_a_missing_folder_is_empty(tmp_path: Path) -> None:
    folder = UploadsFolder(tmp_path / "not-yet", max_total_bytes=10, max_age_s=60)
    assert folder.measure() == 0 and folder.sweep() == []
