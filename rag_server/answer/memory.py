"""Conversation memory: the last turns of a conversation_id feed understanding, so a follow-up keeps the
drug ("còn liều cho trẻ em thì sao?") and the clarify loop is counted per conversation.

PostgreSQL when RAG_DATABASE_URL is set (persistence/conversations.py), else in-process (bounded: the
most recent RAG_MEMORY_CONVERSATIONS conversations, the last turns of each). Both fail open: a memory that
cannot be read is an empty history, a turn that cannot be saved is logged.

Each assistant turn stores what was understood and decided (`TurnFacts`): that is all a later turn reads.

A conversation belongs to the caller that started it (`owner`: the API key's name, ANONYMOUS_OWNER while
auth is off; rag_server.security.auth.conversation_owner). Every call names its caller: `check_owner`,
`recent` and `append` claim a new conversation_id for it (atomically: of two callers racing to start one
id exactly one owns it) and raise ConversationNotOwned for a conversation another caller owns, before
anything of it is read or written. Understand and Ask both go through them; rag_server/api maps the error
to PERMISSION_DENIED (CONVERSATION_NOT_OWNED).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rag_server.domain import DecisionKind
from rag_server.persistence.conversations import ANONYMOUS_OWNER, ConversationNotOwned, Turn
from rag_server.understanding.frame import Prior

if TYPE_CHECKING:
    from rag_server.persistence.conversations import ConversationStore

__all__ = ["ANONYMOUS_OWNER", "ConversationNotOwned", "DatabaseMemory", "InProcessMemory", "Memory",
           "TurnFacts", "prior_of"]


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


def prior_of(turns: Sequence[Turn]) -> Prior:
    """What the earlier turns of a conversation tell the current one: the drugs (and section) of the latest
    turn that named any, the clarifications in a row right before this turn, the turns' text."""
    facts = [TurnFacts.from_dict(t.frame) for t in turns if t.role == "assistant"]
    latest = next((f for f in reversed(facts) if f.drug_ids), TurnFacts())
    clarifies = 0
    for f in reversed(facts):
        if f.decision_kind != DecisionKind.CLARIFY:
            break
        clarifies += 1
    return Prior(latest.drug_ids, latest.section_key, clarifies, tuple((t.role, t.content) for t in turns))


class Memory(Protocol):
    async def check_owner(self, conversation_id: str, owner: str) -> None:
        """Claim a new conversation for `owner`; ConversationNotOwned when another caller owns it."""

    async def recent(self, conversation_id: str, limit: int, owner: str) -> list[Turn]:
        """The last `limit` turns, after check_owner."""

    async def append(self, conversation_id: str, turns: list[Turn], owner: str) -> None:
        """Add turns, after check_owner (nothing is written for another caller)."""


@dataclass
class _Conversation:
    owner: str
    turns: deque[Turn]


class InProcessMemory:
    def __init__(self, conversations: int = 10_000, turns: int = 24) -> None:
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()
        self._max_conversations = conversations
        self._max_turns = turns
        self._lock = threading.Lock()

    def _owned(self, conversation_id: str, owner: str) -> _Conversation:
        """The conversation, claimed for `owner` when new (call under the lock: the claim is atomic)."""
        found = self._conversations.get(conversation_id)
        if found is None:
            found = self._conversations[conversation_id] = _Conversation(owner, deque(maxlen=self._max_turns))
            while len(self._conversations) > self._max_conversations:
                self._conversations.popitem(last=False)
        if found.owner != owner:
            raise ConversationNotOwned(conversation_id)
        return found

    async def check_owner(self, conversation_id: str, owner: str) -> None:
        with self._lock:
            self._owned(conversation_id, owner)

    async def recent(self, conversation_id: str, limit: int, owner: str) -> list[Turn]:
        with self._lock:
            turns = self._owned(conversation_id, owner).turns
            return list(turns)[-limit:] if turns else []

    async def append(self, conversation_id: str, turns: list[Turn], owner: str) -> None:
        with self._lock:
            kept = self._owned(conversation_id, owner).turns
            self._conversations.move_to_end(conversation_id)
            kept.extend(turns)


class DatabaseMemory:
    """PostgreSQL memory (fail-open in ConversationStore itself; ownership is never failed open: a check
    that cannot run reads and writes nothing)."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    async def check_owner(self, conversation_id: str, owner: str) -> None:
        await self.store.check_owner(conversation_id, owner)

    async def recent(self, conversation_id: str, limit: int, owner: str) -> list[Turn]:
        return await self.store.recent(conversation_id, limit, owner=owner)

    async def append(self, conversation_id: str, turns: list[Turn], owner: str) -> None:
        await self.store.append(conversation_id, turns, owner=owner)
