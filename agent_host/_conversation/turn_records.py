"""Turn records: what a turn's caller reads back, idempotent and bounded.

A record names the transcript messages that hold its answer exactly as delivered, so an answer is stored once.
Before the transcript changes or deletes such a message (compaction, retention), the delivered copy moves into
the record: what a poller receives never changes (failures 5 and 8). Knows nothing about HTTP.
"""

from __future__ import annotations

import hashlib
import json
import operator
import secrets
from collections.abc import Sequence
from typing import Any

from agent_framework import AgentResponse

from .approvals import pending_from_response, public_view
from .history import MESSAGES_KEY, message_to_record

TURNS_KEY = "turns"
EXPIRED_TURNS_KEY = "expiredTurns"
DEFAULT_MAX_TURN_RECORDS = 100
DEFAULT_TURN_RECORD_TTL_SECONDS = 24 * 60 * 60
# A turn id starts with its issue time in milliseconds as 11 hex digits, so ids sort by issue time.
TURN_TIME_DIGITS = 11


def new_turn_id(now_ms: int) -> str:
    """A short turn id that sorts by issue time: 11 hex digits of milliseconds, then 8 random characters."""
    return f"{now_ms:0{TURN_TIME_DIGITS}x}{secrets.token_hex(4)}"


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


def completed_record(
    response: AgentResponse, now_ms: int, agent_name: str | None, transcript: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The delivery record of a completed turn: the answer's messages (its text derives from them) and usage.

    A message the transcript holds exactly as delivered is recorded by its id; any other is copied.
    """
    delivered = [message_to_record(message, now_ms, agent_name) for message in response.messages]
    stored = _stored_by_id(transcript, {record["id"] for record in delivered})
    record: dict[str, Any] = {
        "status": "completed",
        "messages": [
            message["id"] if _same_but_time(message, stored.get(message["id"])) else message for message in delivered
        ],
        "at": now_ms,
    }
    approvals = public_view(pending_from_response(response))
    if approvals:
        record["approvalRequests"] = approvals
    if response.usage_details:
        record["usage"] = {key: value for key, value in response.usage_details.items() if value is not None}
    return record


def _stored_by_id(transcript: Sequence[dict[str, Any]], ids: set[str]) -> dict[str, dict[str, Any]]:
    """The transcript's records with these ids, searched from the end, where a turn's answer is."""
    found: dict[str, dict[str, Any]] = {}
    for record in reversed(transcript):
        if record["id"] in ids:
            found.setdefault(record["id"], record)
            if len(found) == len(ids):
                break
    return found


_ABSENT = object()


def _same_but_time(delivered: dict[str, Any], stored: dict[str, Any] | None) -> bool:
    """Whether the stored record is the delivered one, but for when it was stored."""
    if stored is None or len(stored) != len(delivered):
        return False
    return all(key == "at" or stored.get(key, _ABSENT) == value for key, value in delivered.items())


def answer_messages(state: dict[str, Any], record: dict[str, Any]) -> list[dict[str, Any]]:
    """A completed turn's answer as stored messages, the ones it names looked up in the transcript.

    `decode_state` has checked that the transcript holds every message a record names.
    """
    messages: list[str | dict[str, Any]] = record.get("messages", [])
    names = {message for message in messages if isinstance(message, str)}
    if not names:
        return messages  # type: ignore[return-value]
    stored = _stored_by_id(state.get(MESSAGES_KEY, []), names)
    return [stored[message] if isinstance(message, str) else message for message in messages]


def named_messages(turns: dict[str, Any]) -> set[str]:
    """Ids of the transcript messages turn records name as their answers."""
    return {message for record in turns.values() for message in record.get("messages", ()) if isinstance(message, str)}


def keep_delivered_answers(
    turns: dict[str, Any], before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The turn records to keep with transcript `after`, given the transcript `before` they were written against.

    A record naming a message that `after` no longer holds as the very same record (changed by compaction or a
    provider, or deleted by retention) gets the delivered copy from `before`. Returns `turns` itself when no
    record needs one; never changes its argument in place.
    """
    if len(after) >= len(before) and all(map(operator.is_, before, after)):
        return turns  # the transcript only grew: every named message is still the record delivered
    named = named_messages(turns)
    if not named:
        return turns
    was = _stored_by_id(before, named)
    now = _stored_by_id(after, named)
    moved = {message_id for message_id, record in was.items() if now.get(message_id) is not record}
    if not moved:
        return turns
    kept = dict(turns)
    for turn_id, record in turns.items():
        messages = record.get("messages", ())
        if any(isinstance(message, str) and message in moved for message in messages):
            copied = [was[m] if isinstance(m, str) and m in moved else m for m in messages]
            kept[turn_id] = {**record, "messages": copied}
    return kept


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
