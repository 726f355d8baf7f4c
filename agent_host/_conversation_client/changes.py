"""Changing a conversation without a turn: its retention, and deleting it.

The one way the HTTP routes and the standalone worker's client change a conversation: each change has an id, is
signalled to the entity, and is waited for by reading the state back until it shows that id. Knows the conversation
client and read model; nothing of HTTP.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from .._clock import Clock
from .._contract import DELETE_OPERATION, SET_RETENTION_OPERATION
from .._conversation.turn_receipts import KEYED_MARKER, key_digest
from .._conversation.view import ConversationView
from .._errors import ConversationNotFoundError
from .client import ConversationClient

# How long a delete waits for the entity before answering that it is still being deleted.
DELETE_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class RetentionChange:
    """The outcome of a retention change: `state` is the conversation once it was applied, or None while pending."""

    retention: dict[str, Any]
    state: ConversationView | None

    def body(self, conversation_id: str) -> dict[str, Any]:
        """The change as the API answers it: what the conversation has now (a concurrent change may have replaced
        this one since) and what was applied, or `status` "pending"."""
        if self.state is None:
            return {"conversationId": conversation_id, "status": "pending", "retention": self.retention}
        body = {"conversationId": conversation_id, "retention": self.state.retention, "applied": self.retention}
        return {**body, "stateBytes": self.state.state_bytes}


async def change_retention(
    conversations: ConversationClient,
    conversation_id: str,
    retention: dict[str, Any],
    clock: Clock,
    wait_seconds: float,
) -> RetentionChange:
    """Set the conversation's retention (stored shape) and wait up to `wait_seconds` for it to apply.

    Raises:
        StateCorruptError, StateVersionError: the stored state cannot be read; nothing is changed.
    """
    await conversations.read(conversation_id)  # state that cannot be read is refused before any change
    change_id = secrets.token_hex(8)
    await conversations.signal(
        conversation_id, SET_RETENTION_OPERATION, {"changeId": change_id, "retention": retention}
    )
    # A retention change is activity, and may create the conversation: its expiry is watched as a turn's is.
    expiry = conversations.watch_expiry(conversation_id, clock)
    state = await conversations.wait_for_change(conversation_id, change_id, wait_seconds)
    await expiry.finish(state.turn_count if state is not None else None)
    return RetentionChange(retention, state)


def delete_change_id(idempotency_key: str | None) -> str:
    """A delete's change id: a keyed delete has one id however often it is retried, so the entity runs it once
    (failure 19)."""
    return f"{KEYED_MARKER}{key_digest(idempotency_key)}" if idempotency_key is not None else secrets.token_hex(8)


async def delete_conversation(
    conversations: ConversationClient,
    conversation_id: str,
    change_id: str,
) -> bool:
    """Delete the conversation: True once deleted, False while it is still being deleted after the wait.

    Raises:
        ConversationNotFoundError: there was nothing to delete, or another delete got there first (404).
    """
    state = await conversations.read_for_delete(conversation_id)
    if state is not None and state.has_applied_delete(change_id):
        return _deleted(conversations, conversation_id, state, change_id)  # a retry of a delete that already ran
    # Signalled even when nothing is stored yet: a first turn may be queued, and the deletion comes after it, so the
    # conversation does not appear afterwards. With nothing stored the operation stores nothing.
    await conversations.signal(conversation_id, DELETE_OPERATION, {"changeId": change_id})
    if state is None or state.is_deleted:
        raise ConversationNotFoundError(conversations.agent_name, conversation_id, deleted=state is not None)
    settled = await conversations.wait_for_delete(conversation_id, change_id, DELETE_WAIT_SECONDS)
    return settled is not None and _deleted(conversations, conversation_id, settled, change_id)


def _deleted(conversations: ConversationClient, conversation_id: str, state: ConversationView, change_id: str) -> bool:
    """True for a delete that ran, from any state after it: its tombstone, a later delete's, or a conversation
    started since. Only a delete that found nothing (another got there first) is refused."""
    if state.delete_found_nothing(change_id):
        raise ConversationNotFoundError(conversations.agent_name, conversation_id, deleted=True)
    return True
