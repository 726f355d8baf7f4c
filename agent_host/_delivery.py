"""Turn records: what a turn's caller reads back, kept apart from the transcript, idempotent and bounded.

Results never come from the history, so compaction or retention can rewrite the transcript without
changing what a poller receives (failures 5 and 8). Knows nothing about HTTP.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import Any

from agent_framework import AgentResponse

from ._approvals import pending_from_response, public_view
from ._history import message_to_record

TURNS_KEY = "turns"
EXPIRED_TURNS_KEY = "expiredTurns"
DEFAULT_MAX_TURN_RECORDS = 100
DEFAULT_TURN_RECORD_TTL_SECONDS = 24 * 60 * 60
# A turn id starts with its issue time in milliseconds as 11 hex digits, so ids sort by issue time.
TURN_TIME_DIGITS = 11


def new_turn_id() -> str:
    """A short turn id that sorts by issue time: 11 hex digits of milliseconds, then 8 random characters."""
    return f"{int(time.time() * 1000):0{TURN_TIME_DIGITS}x}{secrets.token_hex(4)}"


def issued_at(turn_id: str) -> int | None:
    """When a turn id was issued (ms since the epoch), or None for an id this host did not issue."""
    try:
        return int(turn_id[:TURN_TIME_DIGITS], 16)
    except ValueError:
        return None


def request_hash(payload: dict[str, Any]) -> str:
    """A digest of what a turn asks for, to tell a retry of the same request from a reuse of its key."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def completed_record(response: AgentResponse, now_ms: int) -> dict[str, Any]:
    """The delivery record of a completed turn: the answer's messages (its text derives from them) and usage."""
    record: dict[str, Any] = {
        "status": "completed",
        "messages": [message_to_record(message, now_ms) for message in response.messages],
        "at": now_ms,
    }
    approvals = public_view(pending_from_response(response))
    if approvals:
        record["approvalRequests"] = approvals
    if response.usage_details:
        record["usage"] = {key: value for key, value in response.usage_details.items() if value is not None}
    return record


def failed_record(error: dict[str, str], now_ms: int) -> dict[str, Any]:
    """The delivery record of a failed turn: a stable code and a message, never a raw exception string."""
    return {"status": "failed", "error": error, "at": now_ms}


def find_keyed_turn(state: dict[str, Any], idempotency_key: str) -> tuple[str, dict[str, Any]] | None:
    """The original turn recorded under an Idempotency-Key, if its record is still kept."""
    for turn_id, record in state.get(TURNS_KEY, {}).items():
        if record.get("idempotencyKey") == idempotency_key and "aliasOf" not in record:
            return turn_id, record
    return None


def resolve_alias(state: dict[str, Any], turn_id: str) -> tuple[str, dict[str, Any] | None]:
    """Follow a retried turn to the original it repeats; returns the turn id to report and its record."""
    record = state.get(TURNS_KEY, {}).get(turn_id)
    if record is not None and "aliasOf" in record:
        original = record["aliasOf"]
        return original, state[TURNS_KEY].get(original)
    return turn_id, record


def alias_record(original_turn_id: str, now_ms: int) -> dict[str, Any]:
    """The record of a retry that was answered by an earlier turn with the same key and request."""
    return {"status": "completed", "aliasOf": original_turn_id, "at": now_ms}


def record_turn(
    state: dict[str, Any], turn_id: str, record: dict[str, Any], *, max_records: int, ttl_seconds: float, now_ms: int
) -> None:
    """Store a turn's record, then drop records beyond `max_records` or older than `ttl_seconds`.

    The ids of the last `max_records` dropped turns are kept, so a read can tell an expired turn (410) from
    one never seen (404).
    """
    turns: dict[str, Any] = dict(state.get(TURNS_KEY, {}))
    turns[turn_id] = record
    oldest_kept_ms = now_ms - ttl_seconds * 1000
    expired: list[str] = list(state.get(EXPIRED_TURNS_KEY, []))
    for known in list(turns):
        if len(turns) > max_records or turns[known]["at"] < oldest_kept_ms:
            del turns[known]
            expired.append(known)
    state[TURNS_KEY] = turns
    if expired:
        state[EXPIRED_TURNS_KEY] = expired[-max_records:]
