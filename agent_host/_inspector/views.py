"""What the inspector shows of one conversation, from one read of its state: the summary, the whole transcript with
compaction's annotations, the turn receipts, and where the stored bytes go.

Knows the stored record shapes (`_conversation/state.py`), not how the entity keeps them; sizes are measured as the
entity measures its state (`encode_state`), so they add up to `stateBytes`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .._contract import AgentRoute
from .._conversation.state import (
    AGENT_KEY,
    DELETED_KEY,
    EXPIRED_TURNS_KEY,
    FAILED_INPUT_KEY,
    MESSAGES_KEY,
    PENDING_APPROVALS_KEY,
    RETENTION_KEY,
    SESSION_KEY,
    STATE_BYTES_KEY,
    TURNS_KEY,
    UPDATED_AT_KEY,
    StoredState,
    encode_state,
)
from .._http.rendering import iso_time, render_conversation, render_message


def render_inspection(agent: AgentRoute, conversation_id: str, state: StoredState) -> dict[str, Any]:
    """The conversation as the inspector shows it (excluded messages included)."""
    return {
        "conversation": render_conversation(agent, conversation_id, state),
        "messages": [render_message(record, state.get(AGENT_KEY)) for record in state.get(MESSAGES_KEY, [])],
        "turns": render_turn_records(state),
        "expiredTurns": list(state.get(EXPIRED_TURNS_KEY, [])),
        "bytes": state_sections(state),
        "budget": budget_lines(state.get(RETENTION_KEY, {})),
        "sizes": size_series(state),
    }


def render_deleted(conversation_id: str, state: StoredState) -> dict[str, Any]:
    """A deleted conversation as the inspector shows it: when it was deleted and how many turns went with it."""
    tombstone = state[DELETED_KEY]
    return {
        "conversationId": conversation_id,
        "deleted": {"deletedAt": iso_time(tombstone.get("at")), "removedTurns": len(tombstone.get("turns", []))},
    }


def size_series(state: StoredState) -> list[dict[str, Any]]:
    """The stored size when each kept turn began (its receipt keeps it), oldest first, then the size now."""
    turns: dict[str, dict[str, Any]] = state.get(TURNS_KEY, {})
    ordered = sorted(turns.items(), key=lambda item: (item[1].get("at", 0), item[0]))
    series = [
        {"turnId": turn_id, "at": iso_time(record.get("at")), "stateBytes": record[STATE_BYTES_KEY]}
        for turn_id, record in ordered
        if STATE_BYTES_KEY in record
    ]
    return [*series, {"turnId": None, "at": iso_time(state.get(UPDATED_AT_KEY)), "stateBytes": _size(state)}]


def render_turn_records(state: StoredState) -> list[dict[str, Any]]:
    """Every turn receipt the conversation keeps, oldest first, with what it holds and what it costs."""
    turns: dict[str, dict[str, Any]] = state.get(TURNS_KEY, {})
    rendered = []
    for turn_id, record in sorted(turns.items(), key=lambda item: (item[1].get("at", 0), item[0])):
        answer = record.get("messages", [])
        body: dict[str, Any] = {
            "turnId": turn_id,
            "status": record["status"],
            "completedAt": iso_time(record.get("at")),
            # A string names the transcript message holding the answer; a dict is a copy kept since compaction
            # changed that message.
            "answerMessageIds": [item if isinstance(item, str) else item.get("id") for item in answer],
            "answerCopies": sum(1 for item in answer if isinstance(item, dict)),
            "keyed": "idempotencyKey" in record,
            "bytes": _size(record),
        }
        for field in ("usage", "approvalRequests", "error", FAILED_INPUT_KEY):
            if record.get(field):
                body[field] = record[field]
        rendered.append(body)
    return rendered


def state_sections(state: StoredState) -> dict[str, int]:
    """The stored size in UTF-8 bytes, whole and by section; `other` is the rest (ids, times, settings, syntax)."""
    total = len(encode_state(state).encode("utf-8"))
    sections = {
        "messages": _size(state.get(MESSAGES_KEY, [])),
        "turnRecords": _size(state.get(TURNS_KEY, {})) + _size(state.get(EXPIRED_TURNS_KEY, [])),
        "session": _size(state[SESSION_KEY]) if state.get(SESSION_KEY) is not None else 0,
        "pendingApprovals": _size(state.get(PENDING_APPROVALS_KEY, [])),
    }
    return {"total": total, **sections, "other": total - sum(sections.values())}


def budget_lines(retention: dict[str, Any]) -> dict[str, int]:
    """The byte budget and its watermarks in bytes, as retention computes them."""
    budget = int(retention.get("maxStateBytes", 0))
    return {
        "maxStateBytes": budget,
        "highWatermarkBytes": math.floor(budget * float(retention.get("highWatermark", 0))),
        "lowWatermarkBytes": math.floor(budget * float(retention.get("lowWatermark", 0))),
    }


def _size(value: Any) -> int:
    """The bytes `value` takes in the stored state's encoding."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
