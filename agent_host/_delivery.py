"""Turn records: what a turn's caller reads back, kept apart from the transcript and bounded.

Results never come from the history, so compaction or retention can rewrite the transcript without
changing what a poller receives (failures 5 and 8).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from agent_framework import AgentResponse

from ._history import message_to_record

TURNS_KEY = "turns"
DEFAULT_MAX_TURN_RECORDS = 100


def new_turn_id() -> str:
    """A short turn id that sorts by issue time: 11 hex digits of milliseconds, then 8 random characters."""
    return f"{int(time.time() * 1000):011x}{secrets.token_hex(4)}"


def completed_record(response: AgentResponse, now_ms: int, request_hash: str | None) -> dict[str, Any]:
    """The delivery record of a completed turn: the answer's text, messages and usage."""
    record: dict[str, Any] = {
        "status": "completed",
        "text": response.text,
        "messages": [message_to_record(message, now_ms) for message in response.messages],
        "at": now_ms,
    }
    if response.usage_details:
        record["usage"] = {key: value for key, value in response.usage_details.items() if value is not None}
    if request_hash:
        record["requestHash"] = request_hash
    return record


def failed_record(error: dict[str, str], now_ms: int, request_hash: str | None) -> dict[str, Any]:
    """The delivery record of a failed turn: a stable code and a message, never a raw exception string."""
    record: dict[str, Any] = {"status": "failed", "error": error, "at": now_ms}
    if request_hash:
        record["requestHash"] = request_hash
    return record


def record_turn(state: dict[str, Any], turn_id: str, record: dict[str, Any], max_records: int) -> None:
    """Store a turn's record, dropping the oldest records beyond `max_records`."""
    turns: dict[str, Any] = state.setdefault(TURNS_KEY, {})
    turns[turn_id] = record
    while len(turns) > max_records:
        del turns[next(iter(turns))]
