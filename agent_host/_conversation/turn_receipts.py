"""Turn records: the delivery receipts a turn's caller reads back, idempotent and bounded.

A record names the transcript messages that hold its answer exactly as delivered, so an answer is stored once.
Before compaction changes such a message, the delivered copy moves into the record: what a poller receives never
changes (architecture.md, failures 5 and 8). Records are bounded by count, age and a share of the conversation's
byte budget (`_conversation/retention.py`); a dropped record's turn answers 410. Knows nothing about HTTP.
"""

from __future__ import annotations

import hashlib
import json
import operator
import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from agent_framework import AgentResponse

from .._records import message_text, message_to_record
from .._turn_ids import TURN_TIME_DIGITS, format_turn_id
from .approvals import pending_from_response, public_view
from .state import (
    CANCEL_KEY,
    EXPIRED_TURNS_KEY,
    FAILED_INPUT_KEY,
    MAX_FAILED_INPUT_CHARACTERS,
    MESSAGES_KEY,
    TURNS_KEY,
    StoredState,
)

DEFAULT_MAX_TURN_RECORDS = 100
DEFAULT_TURN_RECORD_TTL_SECONDS = 24 * 60 * 60
# A turn requested with an Idempotency-Key ends with this marker and a digest of the key instead of random
# characters: every retry of the key names the same turn, and no retry needs a record of its own.
KEYED_MARKER = "k"
KEY_DIGEST_DIGITS = 16


def new_turn_id(now_ms: int, idempotency_key: str | None = None) -> str:
    """A short turn id that sorts by issue time: 11 hex digits of milliseconds, then 8 random hex digits, or for a
    keyed request `k` and a digest of the key."""
    if idempotency_key is None:
        return format_turn_id(now_ms, "", secrets.token_hex(4))
    return format_turn_id(now_ms, KEYED_MARKER, key_digest(idempotency_key))


def key_digest(idempotency_key: str) -> str:
    """The digest of an Idempotency-Key that keyed turn ids end with."""
    return hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:KEY_DIGEST_DIGITS]


def request_hash(payload: dict[str, Any]) -> str:
    """A digest of what a turn asks for, to tell a retry of the same request from a reuse of its key."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def completed_receipt(
    response: AgentResponse,
    now_ms: int,
    agent_name: str | None,
    transcript: Sequence[dict[str, Any]],
    pending: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The delivery record of a completed turn: the answer's messages (its text derives from them) and usage.

    A message the transcript holds exactly as delivered is recorded by its id; any other is copied. The approvals
    it asks for are shown as `pending` (the conversation's, after the turn) holds them, with their lifetime.
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
    kept = {item["id"]: item for item in pending}
    approvals = public_view([kept.get(item["id"], item) for item in pending_from_response(response)])
    if approvals:
        record["approvalRequests"] = approvals
    if response.usage_details:
        record["usage"] = {key: value for key, value in response.usage_details.items() if value is not None}
    return record


def failed_receipt(
    error: dict[str, str], now_ms: int, message: str | None = None, approvals: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """The delivery record of a failed turn: a stable code and a message, never a raw exception string, and what the
    turn was sent (its message cut short), since the transcript keeps nothing of it."""
    record: dict[str, Any] = {"status": "failed", "error": error, "at": now_ms}
    sent: dict[str, Any] = {}
    if message:
        cut = len(message) > MAX_FAILED_INPUT_CHARACTERS
        sent["message"] = f"{message[: MAX_FAILED_INPUT_CHARACTERS - 1]}…" if cut else message
    if approvals:
        sent["approvals"] = [{"id": answer["id"], "approved": answer["approved"]} for answer in approvals]
    if sent:
        record[FAILED_INPUT_KEY] = sent
    return record


def cancelled_receipt(now_ms: int, keep: str, *, ran: bool, kept: dict[str, Any] | None = None) -> dict[str, Any]:
    """The delivery record of a cancelled turn: what it kept (`kept`, the completed record of its partial answer, when
    it keeps one) and whether it had started."""
    return {**(kept or {"at": now_ms}), "status": "cancelled", CANCEL_KEY: {"keep": keep, "ran": ran}}


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


def answer_messages(state: StoredState, record: dict[str, Any]) -> list[dict[str, Any]]:
    """A completed turn's answer as stored messages, the ones it names looked up in the transcript.

    `decode_state` has checked that the transcript holds every message a record names.
    """
    messages: list[str | dict[str, Any]] = record.get("messages", [])
    names = {message for message in messages if isinstance(message, str)}
    if not names:
        return messages  # type: ignore[return-value]
    stored = _stored_by_id(state.get(MESSAGES_KEY, []), names)
    return [stored[message] if isinstance(message, str) else message for message in messages]


def turn_text(messages: Iterable[dict[str, Any]]) -> str:
    """A completed turn's answer text, joined from its messages exactly as core's `AgentResponse.text` joins them."""
    return "".join(message_text(message) for message in messages)


def named_messages(turns: dict[str, Any]) -> set[str]:
    """Ids of the transcript messages turn records name as their answers."""
    return {message for record in turns.values() for message in record.get("messages", ()) if isinstance(message, str)}


def keep_delivered_answers(
    turns: dict[str, Any], before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The turn records to keep with transcript `after`, given the transcript `before` they were written against.

    A record naming a message that `after` holds changed (compaction annotated it, a provider rewrote it) gets
    the delivered copy from `before`; a record naming a message `after` no longer holds gets it too. Returns
    `turns` itself when no record needs one; never changes its argument in place.
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


def holds_copies(record: dict[str, Any]) -> bool:
    """Whether a record keeps its own copy of (part of) its answer rather than naming transcript messages."""
    return any(not isinstance(message, str) for message in record.get("messages", ()))


def find_keyed_turn(state: StoredState, idempotency_key: str) -> tuple[str, dict[str, Any]] | None:
    """The turn recorded under an Idempotency-Key, if its record is still kept."""
    for turn_id, record in state.get(TURNS_KEY, {}).items():
        if record.get("idempotencyKey") == idempotency_key:
            return turn_id, record
    return None


def find_turn(state: StoredState, turn_id: str) -> tuple[str, dict[str, Any] | None]:
    """A turn's record, and the id to report: a keyed turn id finds the turn that ran for its key.

    Every retry of an Idempotency-Key names its own turn id with the key's digest; the one that ran is recorded.
    """
    turns: dict[str, Any] = state.get(TURNS_KEY, {})
    record = turns.get(turn_id)
    if record is not None or KEYED_MARKER not in turn_id[TURN_TIME_DIGITS : TURN_TIME_DIGITS + 1]:
        return turn_id, record
    digest = turn_id[TURN_TIME_DIGITS + 1 :]
    for known, candidate in turns.items():
        key = candidate.get("idempotencyKey")
        if key is not None and known.endswith(digest) and key_digest(key) == digest:
            return known, candidate
    return turn_id, None


def expired_keyed_turn(state: StoredState, idempotency_key: str) -> str | None:
    """The expired turn that ran for an Idempotency-Key, if its id is still remembered."""
    suffix = KEYED_MARKER + key_digest(idempotency_key)
    return next((known for known in state.get(EXPIRED_TURNS_KEY, ()) if known.endswith(suffix)), None)


def is_expired(state: StoredState, turn_id: str) -> bool:
    """Whether the turn ran but its record is no longer kept (it answers 410)."""
    if turn_id in state.get(EXPIRED_TURNS_KEY, ()):
        return True
    if KEYED_MARKER in turn_id[TURN_TIME_DIGITS : TURN_TIME_DIGITS + 1]:
        digest = turn_id[TURN_TIME_DIGITS + 1 :]
        return any(known.endswith(KEYED_MARKER + digest) for known in state.get(EXPIRED_TURNS_KEY, ()))
    return False


def record_receipt(
    state: StoredState, turn_id: str, record: dict[str, Any], *, max_records: int, ttl_seconds: float, now_ms: int
) -> None:
    """Store a turn's record, then drop records beyond `max_records` or older than `ttl_seconds`.

    The ids of the last `max_records` dropped turns are kept, so a read can tell an expired turn (410) from
    one never seen (404).
    """
    turns: dict[str, Any] = dict(state.get(TURNS_KEY, {}))
    turns[turn_id] = record
    oldest_kept_ms = now_ms - ttl_seconds * 1000
    dropped = [
        known
        for position, known in enumerate(turns)
        if len(turns) - position > max_records or turns[known]["at"] < oldest_kept_ms
    ]
    state[TURNS_KEY] = turns
    expire_turns(state, dropped, max_records=max_records)


def expire_turns(state: StoredState, turn_ids: Sequence[str], *, max_records: int) -> None:
    """Drop these turns' records in place; their ids join the bounded list of expired turns (they answer 410)."""
    if not turn_ids:
        return
    gone = set(turn_ids)
    state[TURNS_KEY] = {known: record for known, record in state.get(TURNS_KEY, {}).items() if known not in gone}
    state[EXPIRED_TURNS_KEY] = [*state.get(EXPIRED_TURNS_KEY, []), *turn_ids][-max_records:]
