"""The in-process conversation memory: a conversation belongs to the caller that started it."""

from __future__ import annotations

import asyncio

import pytest

from rag_server.answer.memory import ConversationNotOwned, InProcessMemory
from rag_server.persistence.conversations import Turn


async def test_another_owner_can_neither_read_nor_write() -> None:
    memory = InProcessMemory()
    await memory.append("c1", [Turn("user", "chống chỉ định của zentorin")], "ward-a")
    for attempt in (memory.recent("c1", 12, "ward-b"), memory.append("c1", [Turn("user", "x")], "ward-b"),
                    memory.check_owner("c1", "ward-b"), memory.check_owner("c1", "anonymous")):
        with pytest.raises(ConversationNotOwned) as info:
            await attempt
        assert info.value.conversation_id == "c1" and "ward-a" not in str(info.value)
    assert [t.content for t in await memory.recent("c1", 12, "ward-a")] == ["chống chỉ định của zentorin"]


async def test_the_first_caller_of_a_new_id_owns_it() -> None:
    memory = InProcessMemory()
    results = await asyncio.gather(*(memory.check_owner("new", f"key-{i}") for i in range(10)),
                                   return_exceptions=True)
    assert [r for r in results if r is None] == [None]
    with pytest.raises(ConversationNotOwned):
        await memory.recent("new", 12, "key-1")
    assert await memory.recent("new", 12, "key-0") == []


async def test_an_evicted_conversation_is_forgotten_with_its_owner() -> None:
    memory = InProcessMemory(conversations=2)
    for cid in ("c1", "c2", "c3"):
        await memory.append(cid, [Turn("user", cid)], "ward-a")
    assert await memory.recent("c1", 12, "ward-b") == []  # evicted: nothing of it is left to read
    assert [t.content for t in await memory.recent("c3", 12, "ward-a")] == ["c3"]
