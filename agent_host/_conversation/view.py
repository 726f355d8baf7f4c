"""The conversation as every layer above this package reads it: typed views of one stored state.

Built here from a decoded state and handed out by the conversation client, so triggers, renderers, tools and the
inspector read fields and ask questions (is this turn settled? did that delete run?) without spelling a stored
key. Message records keep the records codec's shape (`_records.py`), which every layer speaks. Knows nothing of
HTTP.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from .approvals import answered_approvals, expired_approvals, public_view
from .state import (
    AGENT_KEY,
    APPLIED_CHANGES_KEY,
    CANCEL_KEY,
    CAPACITY_ERROR_KEY,
    CREATED_AT_KEY,
    DELETED_KEY,
    EXPIRED_APPROVALS_KEY,
    EXPIRED_TURNS_KEY,
    FAILED_INPUT_KEY,
    IMPORTED_FROM_KEY,
    MESSAGES_KEY,
    OWNER_KEY,
    PENDING_APPROVALS_KEY,
    RETENTION_KEY,
    SESSION_KEY,
    STATE_BYTES_KEY,
    STRUCTURED_KEY,
    TRUNCATION_KEY,
    TURN_COUNT_KEY,
    TURNS_KEY,
    UPDATED_AT_KEY,
    StoredState,
    delete_found_nothing,
    encode_state,
    has_applied_delete,
)
from .turn_receipts import answer_messages, expired_keyed_turn, find_keyed_turn, find_turn, is_expired, turn_text

TurnStatus = Literal["completed", "failed", "cancelled"]
COMPLETED: TurnStatus = "completed"
FAILED: TurnStatus = "failed"
CANCELLED: TurnStatus = "cancelled"


@dataclass(frozen=True)
class TurnView:
    """One kept turn receipt, its answer resolved against the transcript.

    Attributes:
        turn_id: The id the turn is reported by (a keyed retry reads the turn that ran for its key).
        status: `completed`, `failed` or `cancelled`.
        completed_at: When the receipt was written (ms since the epoch).
        answer: A completed turn's answer as stored message records (a cancelled turn's partial answer); empty for a
            failed turn.
        error: A failed turn's `{"code", "message"}`, else None.
        usage: The answer's usage details (empty when none were reported).
        approval_requests: The tool calls the turn left waiting for approval, as a caller sees them (with
            `expiresAt`, ms since the epoch, when they have a lifetime).
        expired_approvals: The approvals the turn declined because their lifetime had passed, in the same form.
        structured: Whether the answer's text is JSON matching the structured output the turn asked for.
        request_hash: The digest of what a keyed turn asked for, to tell a retry from a reuse of its key.
        keyed: Whether the turn was requested with an idempotency key.
        failed_input: What a failed turn was sent (its message cut short, its approval answers), or None.
        answer_message_ids: The ids of the answer's messages, named in the transcript or copied.
        answer_copies: How many of them the receipt keeps a copy of (compaction changed the transcript's).
        stored_bytes: The bytes the receipt takes in the stored state.
        state_bytes_at_start: The conversation's stored size when the turn began (None for its first).
        cancel: A cancelled turn's `{"keep": "partial" | "nothing", "ran": bool}`, else None.
    """

    turn_id: str
    status: TurnStatus
    completed_at: int | None
    answer: tuple[dict[str, Any], ...]
    error: dict[str, str] | None
    usage: dict[str, Any]
    approval_requests: list[dict[str, Any]]
    expired_approvals: list[dict[str, Any]]
    structured: bool
    request_hash: str | None
    keyed: bool
    failed_input: dict[str, Any] | None
    answer_message_ids: tuple[str | None, ...]
    answer_copies: int
    stored_bytes: int
    state_bytes_at_start: int | None
    cancel: dict[str, Any] | None = None

    @property
    def completed(self) -> bool:
        """Whether the turn answered (else it failed, and `error` says why, or it was cancelled)."""
        return self.status == COMPLETED

    @property
    def cancelled(self) -> bool:
        """Whether the turn was cancelled (`answer` holds what it kept)."""
        return self.status == CANCELLED

    @property
    def text(self) -> str:
        """A completed turn's answer text, joined as core's `AgentResponse.text` joins it."""
        return turn_text(self.answer)

    @property
    def value(self) -> Any:
        """A structured answer's parsed value (the entity checked it against the schema)."""
        return json.loads(self.text)


@dataclass(frozen=True)
class DeletedView:
    """The tombstone a deleted conversation leaves.

    Attributes:
        deleted_at: When it was deleted (ms since the epoch).
        existed: Whether there was a conversation to delete.
        turn_ids: The turns the deletion removed.
    """

    deleted_at: int | None
    existed: bool
    turn_ids: tuple[str, ...]


@dataclass(frozen=True)
class BudgetView:
    """The conversation's byte budget and its watermarks in bytes, as retention computes them."""

    max_state_bytes: int
    high_watermark_bytes: int
    low_watermark_bytes: int


class ConversationView:
    """One read of a conversation's stored state (or of its tombstone), seen through typed fields and questions.

    Args:
        state: The decoded, validated state (`decode_state`); the view never changes it.
    """

    def __init__(self, state: StoredState) -> None:
        self._stored = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConversationView) and self._stored == other._stored

    __hash__ = None  # type: ignore[assignment]  # equal views hold equal (mutable) states

    def __repr__(self) -> str:
        return f"ConversationView({self._stored!r})"

    @classmethod
    def empty(cls) -> ConversationView:
        """A view with nothing stored: no turns, messages or tombstone."""
        return cls({})

    # -- the conversation ------------------------------------------------------------------------

    @property
    def deleted(self) -> DeletedView | None:
        """The tombstone, when the conversation was deleted."""
        tombstone = self._stored.get(DELETED_KEY)
        if tombstone is None:
            return None
        return DeletedView(tombstone.get("at"), bool(tombstone.get("existed")), tuple(tombstone.get("turns", ())))

    @property
    def is_deleted(self) -> bool:
        """Whether the state is a deleted conversation's tombstone."""
        return DELETED_KEY in self._stored

    @property
    def agent_name(self) -> str | None:
        """The conversation's agent, whose name its assistant messages imply."""
        return self._stored.get(AGENT_KEY)

    @property
    def owner(self) -> str | None:
        """The principal whose conversation this is, or None (owners off when it was created, or the admin key)."""
        return self._stored.get(OWNER_KEY)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript's message records in conversation order (excluded ones included)."""
        return self._stored.get(MESSAGES_KEY, [])

    @property
    def turn_count(self) -> int:
        """How many turns the conversation has run."""
        return int(self._stored.get(TURN_COUNT_KEY, 0))

    @cached_property
    def state_bytes(self) -> int:
        """The stored size in UTF-8 bytes, measured as the entity measures it."""
        return len(encode_state(self._stored).encode("utf-8"))

    @property
    def retention(self) -> dict[str, Any]:
        """The conversation's retention settings in their stored (and wire) form."""
        return self._stored.get(RETENTION_KEY, {})

    @property
    def budget(self) -> BudgetView:
        """The byte budget and its watermarks in bytes."""
        retention = self.retention
        budget = int(retention.get("maxStateBytes", 0))
        return BudgetView(
            max_state_bytes=budget,
            high_watermark_bytes=math.floor(budget * float(retention.get("highWatermark", 0))),
            low_watermark_bytes=math.floor(budget * float(retention.get("lowWatermark", 0))),
        )

    @property
    def truncation(self) -> dict[str, Any]:
        """What retention has deleted so far, in its stored (and wire) form."""
        return self._stored.get(TRUNCATION_KEY, {})

    @property
    def pending_approvals(self) -> list[dict[str, Any]]:
        """The tool calls waiting for the caller's approval, as a caller sees them."""
        return public_view(self._stored.get(PENDING_APPROVALS_KEY, []))

    @property
    def pending_approvals_by_id(self) -> dict[str, dict[str, Any]]:
        """The pending approvals as stored, by request id (to check a turn's answers against)."""
        return {item["id"]: item for item in self._stored.get(PENDING_APPROVALS_KEY, [])}

    def answered_approvals(self) -> dict[str, bool]:
        """The approvals the transcript holds answers to, by request id: approved or not."""
        return answered_approvals(self.messages)

    def expired_approvals(self, now_ms: int) -> dict[str, int]:
        """When each expired approval expired, by request id: pending ones past their lifetime at `now_ms` (the
        next turn declines them) and those a turn declined already."""
        return expired_approvals(self._stored.get(PENDING_APPROVALS_KEY, []), self.messages, now_ms)

    @property
    def created_at(self) -> int | None:
        """When the conversation was created (ms since the epoch)."""
        return self._stored.get(CREATED_AT_KEY)

    @property
    def updated_at(self) -> int | None:
        """When the conversation last changed (ms since the epoch)."""
        return self._stored.get(UPDATED_AT_KEY)

    @property
    def capacity_error(self) -> dict[str, str] | None:
        """Why the last turn was refused for capacity, when it was."""
        return self._stored.get(CAPACITY_ERROR_KEY) or None

    @property
    def imported_from(self) -> dict[str, Any] | None:
        """Where an imported conversation's first messages came from (entity, schema version, counts)."""
        return self._stored.get(IMPORTED_FROM_KEY) or None

    @property
    def imported_at(self) -> int | None:
        """When an imported conversation was imported (ms since the epoch)."""
        return (self.imported_from or {}).get("at")

    def section_bytes(self) -> dict[str, int]:
        """The stored size by section (messages, turn records, session, pending approvals), in UTF-8 bytes."""
        state = self._stored
        return {
            "messages": _size(state.get(MESSAGES_KEY, [])),
            "turnRecords": _size(state.get(TURNS_KEY, {})) + _size(state.get(EXPIRED_TURNS_KEY, [])),
            "session": _size(state[SESSION_KEY]) if state.get(SESSION_KEY) is not None else 0,
            "pendingApprovals": _size(state.get(PENDING_APPROVALS_KEY, [])),
        }

    # -- turns -----------------------------------------------------------------------------------

    @property
    def turn_ids(self) -> tuple[str, ...]:
        """The ids of the turns whose receipts are kept."""
        return tuple(self._stored.get(TURNS_KEY, {}))

    @property
    def expired_turn_ids(self) -> tuple[str, ...]:
        """The ids of the most recent turns whose receipts were dropped (they answer 410)."""
        return tuple(self._stored.get(EXPIRED_TURNS_KEY, ()))

    def turn(self, turn_id: str) -> TurnView | None:
        """A turn's kept receipt; a keyed turn id finds the turn that ran for its key."""
        reported_id, record = find_turn(self._stored, turn_id)
        return None if record is None else self._turn_view(reported_id, record)

    def keyed_turn(self, idempotency_key: str) -> TurnView | None:
        """The turn recorded under an idempotency key, if its receipt is still kept."""
        found = find_keyed_turn(self._stored, idempotency_key)
        return None if found is None else self._turn_view(*found)

    def expired_keyed_turn(self, idempotency_key: str) -> str | None:
        """The expired turn that ran for an idempotency key, if its id is still remembered."""
        return expired_keyed_turn(self._stored, idempotency_key)

    def is_expired(self, turn_id: str) -> bool:
        """Whether the turn ran but its receipt is no longer kept (it answers 410)."""
        return is_expired(self._stored, turn_id)

    def deleted_with(self, turn_id: str) -> bool:
        """Whether the turn was removed with its deleted conversation."""
        deleted = self.deleted
        return deleted is not None and turn_id in deleted.turn_ids

    def settles(self, turn_id: str) -> bool:
        """Whether this state settles the turn: recorded, expired, or deleted with its conversation."""
        if self.is_deleted:
            return self.deleted_with(turn_id)
        return find_turn(self._stored, turn_id)[1] is not None or is_expired(self._stored, turn_id)

    def receipts(self) -> list[TurnView]:
        """Every kept turn receipt, oldest first."""
        turns: dict[str, dict[str, Any]] = self._stored.get(TURNS_KEY, {})
        ordered = sorted(turns.items(), key=lambda item: (item[1].get("at", 0), item[0]))
        return [self._turn_view(turn_id, record) for turn_id, record in ordered]

    # -- changes ---------------------------------------------------------------------------------

    def has_applied_change(self, change_id: str) -> bool:
        """Whether the conversation acknowledged the retention request `change_id`."""
        return change_id in self._stored.get(APPLIED_CHANGES_KEY, ())

    def has_applied_delete(self, change_id: str) -> bool:
        """Whether the delete request `change_id` ran on this entity (on this conversation or one before it)."""
        return has_applied_delete(self._stored, change_id)

    def delete_found_nothing(self, change_id: str) -> bool:
        """Whether this is the tombstone the delete `change_id` wrote last, and it had nothing to delete."""
        return delete_found_nothing(self._stored, change_id)

    def _turn_view(self, turn_id: str, record: dict[str, Any]) -> TurnView:
        answer: Sequence[str | dict[str, Any]] = record.get("messages", [])
        status: TurnStatus = record["status"]
        answered = status != FAILED
        return TurnView(
            turn_id=turn_id,
            status=status,
            completed_at=record.get("at"),
            answer=tuple(answer_messages(self._stored, record)) if answered else (),
            error=None if answered else record.get("error"),
            usage=record.get("usage") or {},
            approval_requests=record.get("approvalRequests", []),
            expired_approvals=record.get(EXPIRED_APPROVALS_KEY, []),
            structured=bool(record.get(STRUCTURED_KEY)),
            request_hash=record.get("requestHash"),
            keyed="idempotencyKey" in record,
            failed_input=record.get(FAILED_INPUT_KEY),
            answer_message_ids=tuple(item if isinstance(item, str) else item.get("id") for item in answer),
            answer_copies=sum(1 for item in answer if isinstance(item, dict)),
            stored_bytes=_size(record),
            state_bytes_at_start=record.get(STATE_BYTES_KEY),
            cancel=record.get(CANCEL_KEY),
        )


def _size(value: Any) -> int:
    """The bytes `value` takes in the stored state's encoding."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
