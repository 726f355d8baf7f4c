"""The one owner check every front end goes through: `for_caller` gives the conversations a caller may reach, and
`OwnedConversationClient` shows a principal only its own. Knows the conversation client and the read model, nothing
of routes (docs/security.md, "Per-user conversations").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._clock import Clock
from .._contract import RUN_OPERATION, SET_RETENTION_OPERATION
from .._conversation.view import ConversationView
from .._errors import ConversationNotFoundError
from .._owners import Caller, Owners
from .client import ConversationClient, TurnWatch

OWNER_FIELD = "owner"
# Operations that may create a conversation: they carry the caller, whom a new conversation records as its owner.
_CREATING_OPERATIONS = frozenset({RUN_OPERATION, SET_RETENTION_OPERATION})


def for_caller(
    conversations: ConversationClient,
    owners: Owners | None,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
) -> ConversationClient:
    """The conversations as the request's caller may reach them: all of them when the app has no owners.

    Raises:
        UnauthenticatedError: owners are on, and the request names no caller.
    """
    caller = caller_of(owners, headers, params)
    if caller is None or caller.owner is None:
        return conversations
    return OwnedConversationClient(conversations, caller.owner)


def caller_of(
    owners: Owners | None, headers: Mapping[str, str], params: Mapping[str, str] | None = None
) -> Caller | None:
    """The request's caller, or None when the app has no owners. Its `owner` is None for the admin key.

    Raises:
        UnauthenticatedError: owners are on, and the request names no caller.
    """
    return None if owners is None else owners.caller(headers, params or {})


class OwnedConversationClient:
    """A `ConversationClient` that shows one principal only the conversations it owns; any other is not found.

    Another principal's conversation reads as `ConversationNotFoundError` (404, the body a conversation that does
    not exist gets), never 403: a caller learns nothing of ids it does not own. A conversation without an owner
    (created before owners were on, or by the admin key) is nobody's: only the admin key reaches it.
    """

    def __init__(self, conversations: ConversationClient, owner: str) -> None:
        self._conversations = conversations
        self._owner = owner

    @property
    def agent_name(self) -> str:
        """The agent whose conversations these are."""
        return self._conversations.agent_name

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Queue an operation on a conversation the caller owns, or that does not exist yet (it will own it)."""
        self._visible(conversation_id, await self._conversations.read_for_delete(conversation_id))
        if operation in _CREATING_OPERATIONS:
            # The entity records it on a new conversation, and refuses it on another's (a first turn's race).
            payload = {**payload, OWNER_FIELD: self._owner}
        await self._conversations.signal(conversation_id, operation, payload)

    async def read(self, conversation_id: str) -> ConversationView | None:
        """As the inner client's `read`, for a conversation the caller owns."""
        return self._visible(conversation_id, await self._conversations.read(conversation_id))

    async def read_for_delete(self, conversation_id: str) -> ConversationView | None:
        """As the inner client's `read_for_delete`, for a conversation the caller owns."""
        return self._visible(conversation_id, await self._conversations.read_for_delete(conversation_id))

    async def wait_for_turn(self, conversation_id: str, turn_id: str, timeout: float) -> ConversationView | None:
        """As the inner client's `wait_for_turn`, for a conversation the caller owns."""
        settled = await self._conversations.wait_for_turn(conversation_id, turn_id, timeout)
        return self._visible(conversation_id, settled)

    async def wait_for_change(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """As the inner client's `wait_for_change`, for a conversation the caller owns."""
        settled = await self._conversations.wait_for_change(conversation_id, change_id, timeout)
        return self._visible(conversation_id, settled)

    async def wait_for_delete(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """As the inner client's `wait_for_delete`, for a conversation the caller owns."""
        settled = await self._conversations.wait_for_delete(conversation_id, change_id, timeout)
        return self._visible(conversation_id, settled)

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        """As the inner client's: only a conversation that does not exist yet imports, and the caller will own it."""
        return await self._conversations.history_to_import(conversation_id, now_ms)

    async def may_hold_queued_turns(self, conversation_id: str) -> bool:
        """As the inner client's (nothing is stored, so there is no owner to check)."""
        return await self._conversations.may_hold_queued_turns(conversation_id)

    def watch_expiry(self, conversation_id: str, clock: Clock) -> TurnWatch:
        """As the inner client's (the watch is started after the caller's operation was let through)."""
        return self._conversations.watch_expiry(conversation_id, clock)

    def owns(self, state: ConversationView) -> bool:
        """Whether the caller owns the conversation `state` holds."""
        return state.owner == self._owner

    def _visible(self, conversation_id: str, state: ConversationView | None) -> ConversationView | None:
        """`state` when nothing is stored or the caller owns it.

        Raises:
            ConversationNotFoundError: another principal owns it, or nobody does.
        """
        if state is None or self.owns(state):
            return state
        raise ConversationNotFoundError(self.agent_name, conversation_id)
