"""An in-memory conversation client: the `ConversationClient` seam over a dict, for tests of what sits above it.

A `run` signal is answered at once by the test's `answer` (a turn receipt, or None to leave the turn unanswered),
so a front end's rendering of every turn outcome can be tested without an entity or a host.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from agent_host._clock import Clock
from agent_host._contract import RUN_OPERATION
from agent_host._conversation.view import ConversationView

Answer = Callable[[dict[str, Any]], dict[str, Any] | None]


def completed(text: str) -> Answer:
    """Every turn completes with `text` (the receipt keeps its own copy of the answer)."""
    return lambda operation: {
        "status": "completed",
        "at": 1,
        "messages": [{"id": f"{operation['turnId']}-0", "role": "assistant", "text": text, "at": 1}],
    }


def failed(code: str, message: str) -> Answer:
    """Every turn fails with this error."""
    return lambda operation: {"status": "failed", "at": 1, "error": {"code": code, "message": message}}


def unanswered(operation: dict[str, Any]) -> None:
    """No turn is ever answered (the entity is busy, or down)."""
    return None


class SettledWatch:
    """An expiry watch that has nothing to do."""

    async def finish(self, turn_count: int | None = None) -> str:
        return "off"


class MemoryConversationClient:
    """One agent's conversations as dicts of stored state; records every signal and expiry watch."""

    def __init__(self, answer: Answer, agent_name: str = "assistant") -> None:
        self.agent_name = agent_name
        self.states: dict[str, dict[str, Any]] = {}
        self.signals: list[tuple[str, str, dict[str, Any]]] = []
        self.watched: list[str] = []
        self._answer = answer

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        self.signals.append((conversation_id, operation, payload))
        if operation != RUN_OPERATION:
            return
        record = self._answer(payload)
        if record is None:
            return
        if "idempotencyKey" in payload:
            record = {**record, "idempotencyKey": payload["idempotencyKey"], "requestHash": payload["requestHash"]}
        state = self.states.setdefault(conversation_id, {"agent": self.agent_name, "messages": [], "turnCount": 0})
        state["turns"] = {**state.get("turns", {}), payload["turnId"]: record}
        state["turnCount"] += 1

    async def read(self, conversation_id: str) -> ConversationView | None:
        state = self.states.get(conversation_id)
        return None if state is None else ConversationView(copy.deepcopy(state))

    async def read_for_delete(self, conversation_id: str) -> ConversationView | None:
        return await self.read(conversation_id)

    async def wait_for_turn(self, conversation_id: str, turn_id: str, timeout: float) -> ConversationView | None:
        view = await self.read(conversation_id)
        return view if view is not None and view.settles(turn_id) else None

    async def wait_for_change(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        view = await self.read(conversation_id)
        return view if view is not None and view.has_applied_change(change_id) else None

    async def wait_for_delete(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        view = await self.read(conversation_id)
        return view if view is not None and view.has_applied_delete(change_id) else None

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        return None

    async def may_hold_queued_turns(self, conversation_id: str) -> bool:
        return False

    def watch_expiry(self, conversation_id: str, clock: Clock) -> SettledWatch:
        self.watched.append(conversation_id)
        return SettledWatch()
