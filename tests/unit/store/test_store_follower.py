"""The follower of an embedded store another process owns (`serve --workers`): it serves a private copy of
the generation ACTIVE.json names (the owner's shard directory is never opened: its WAL is locked while the
owner has it), sees every read the owner sees, follows a switch only when asked (`follow`), keeps serving
its copy when the owner removes the old generation, and refuses every write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fictional_chunks import fictional_chunks
from test_store_congruence import load

from rag_server.store.base import ChunkFilter
from rag_server.store.common import StoreError
from rag_server.store.edge import EdgeStore
from rag_server.store.follower import FollowerEdgeStore, copy_sparse


def test_a_sparse_copy_keeps_the_data_the_size_and_the_holes(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.dat", tmp_path / "dst.dat"
    with src.open("wb") as f:
        f.write(b"head")
        f.seek(8 << 20)
        f.write(b"middle")
        f.truncate(32 << 20)
    copy_sparse(src, dst)
    assert dst.stat().st_size == src.stat().st_size
    data = dst.read_bytes()
    assert data[:4] == b"head" and data[8 << 20:(8 << 20) + 6] == b"middle"
    assert data.count(0) == len(data) - 10
    assert dst.stat().st_blocks * 512 < 4 << 20  # holes stayed holes


def test_a_follower_serves_the_owners_generation_and_follows_its_switch(tmp_path: Path) -> None:
    root = tmp_path / "store"
    owner = EdgeStore(root)
    chunks = fictional_chunks()
    load(owner, "g1", chunks)
    follower = FollowerEdgeStore(root, tmp_path / "followers" / "1")
    try:
        assert follower.active_generation == "g1"
        assert follower.manifest() == owner.manifest()
        everything = ChunkFilter()
        assert follower.count(everything) == owner.count(everything) == len(chunks)
        one = ChunkFilter(drug_id=chunks[0].drug_id)
        ids = sorted(c.chunk_id for c in owner.scroll(one))
        assert sorted(c.chunk_id for c in follower.scroll(one)) == ids
        assert not follower.follow()  # nothing changed

        fewer = [c for c in chunks if c.drug_id != chunks[0].drug_id]
        load(owner, "g2", fewer)  # the owner switches and removes g1
        assert not (root / "generations" / "g1").exists()
        assert follower.count(everything) == len(chunks)  # still its copy of g1, until it follows
        assert follower.follow()
        assert follower.active_generation == "g2"
        assert follower.count(everything) == len(fewer)
        assert sorted(os.listdir(tmp_path / "followers" / "1")) == ["g2"]  # the old copy removed
    finally:
        follower.close()
        owner.close()
    assert not (tmp_path / "followers" / "1").exists()


def test_a_follower_of_an_empty_store_serves_nothing_until_the_first_switch(tmp_path: Path) -> None:
    root = tmp_path / "store"
    owner = EdgeStore(root)
    follower = FollowerEdgeStore(root, tmp_path / "f")
    try:
        assert follower.manifest() is None and follower.count(ChunkFilter()) == 0
        load(owner, "g1", fictional_chunks())
        assert follower.follow() and follower.active_generation == "g1"
    finally:
        follower.close()
        owner.close()


def test_a_follower_never_writes(tmp_path: Path) -> None:
    owner = EdgeStore(tmp_path / "store")
    follower = FollowerEdgeStore(tmp_path / "store", tmp_path / "f")
    try:
        for write in (lambda: follower.create_generation("g9", 16), lambda: follower.drop_generation("g9"),
                      lambda: follower.upsert("g9", []), lambda: follower.generation_count("g9")):
            with pytest.raises(StoreError, match="owns"):
                write()
    finally:
        follower.close()
        owner.close()
