"""Conversation memory: the last turns of a conversation_id feed understanding, so a follow-up keeps the
drug ("còn liều cho trẻ em thì sao?") and the clarify loop is counted per conversation.

PostgreSQL when RAG_DATABASE_URL is set (persistence/conversations.py), else in-process (bounded: the
most recent RAG_MEMORY_CONVERSATIONS conversations, the last turns of each). Both fail open: a memory that
cannot be read is an empty history, a turn that cannot be saved is logged.

Each assistant turn stores what was understood and decided (`TurnFacts`): that is all a later turn reads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rag_server.domain import DecisionKind
from rag_server.persistence.conversations import Turn

if TYPE_CHECKING:
    from rag_server.persistence.conversations import ConversationStore


@dataclass(frozen=True)
class TurnFacts:
    """What an assistant turn understood and decided, as stored in its `frame`."""

    drug_ids: tuple[str, ...] = ()
    section_key: str = ""
    turn_type: str = ""
    decision_kind: int = 0
    reason: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"drug_ids": list(self.drug_ids), "section_key": self.section_key, "turn_type": self.turn_type,
                "decision_kind": self.decision_kind, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TurnFacts:
        data = data or {}
        return cls(
            tuple(str(d) for d in data.get("drug_ids", [])), str(data.get("section_key", "")),
            str(data.get("turn_type", "")), int(data.get("decision_kind", 0)), int(data.get("reason", 0)),
        )


@dataclass(frozen=True)
class Recalled:
    """What the earlier turns of a conversation tell the current one."""

    drug_ids: tuple[str, ...] = ()  # the drugs of the latest turn that named any
    section_key: str = ""  # the section of that turn
    clarifies: int = 0  # consecutive clarifications right before this turn
    turns: tuple[Turn, ...] = ()

    @classmethod
    def of(cls, turns: Sequence[Turn]) -> Recalled:
        facts = [TurnFacts.from_dict(t.frame) for t in turns if t.role == "assistant"]
        latest = next((f for f in reversed(facts) if f.drug_ids), TurnFacts())
        clarifies = 0
        for f in reversed(facts):
            if f.decision_kind != DecisionKind.CLARIFY:
                break
            clarifies += 1
        return cls(latest.drug_ids, latest.section_key, clarifies, tuple(turns))


class Memory(Protocol):
    async def recent(self, conversation_id: str, limit: int) -> list[Turn]: ...

    async def append(self, conversation_id: str, turns: list[Turn]) -> None: ...


class InProcessMemory:
    def __init__(self, conversations: int = 10_000, turns: int = 24) -> None:
        self._conversations: OrderedDict[str, deque[Turn]] = OrderedDict()
        self._max_conversations = conversations
        self._max_turns = turns
        self._lock = threading.Lock()

    async def recent(self, conversation_id: str, limit: int) -> list[Turn]:
        with self._lock:
            turns = self._conversations.get(conversation_id)
            return list(turns)[-limit:] if turns else []

    async def append(self, conversation_id: str, turns: list[Turn]) -> None:
        with self._lock:
            kept = self._conversations.setdefault(conversation_id, deque(maxlen=self._max_turns))
            self._conversations.move_to_end(conversation_id)
            kept.extend(turns)
            while len(self._conversations) > self._max_conversations:
                self._conversations.popitem(last=False)


class DatabaseMemory:
    """PostgreSQL memory (fail-open in ConversationStore itself)."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    async def recent(self, conversation_id: str, limit: int) -> list[Turn]:
        return await self.store.recent(conversation_id, limit)

    async def append(self, conversation_id: str, turns: list[Turn]) -> None:
        await self.store.append(conversation_id, turns)
