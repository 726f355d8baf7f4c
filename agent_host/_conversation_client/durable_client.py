"""The conversation client on the Functions durable client binding: signal, read, wait, import, watch expiry.

`read_entity_state` returns the whole state, so every poll costs a read of the full conversation: poll with a
short interval that grows, never a fixed second. A host or store that cannot answer is `storage_unavailable`
(503), never a corrupt conversation (architecture.md, failure 16).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import azure.durable_functions as df

from .._clock import Clock
from .._contract import RUN_OPERATION, AgentRoute
from .._conversation.state import decode_state
from .._conversation.view import ConversationView
from .._errors import StateCorruptError, StateVersionError, StorageUnavailableError
from .._expiry.starter import TurnExpiry
from .._tracing import with_trace_context
from .entity_state import EntityStateReader
from .published_import import history_to_import

FIRST_POLL_SECONDS = 0.005
POLL_GROWTH = 1.5
MAX_POLL_SECONDS = 0.25

T = TypeVar("T")


class DurableConversationClient:
    """One agent's conversations through the durable client binding: the `ConversationClient` of a function app.

    Args:
        client: The durable client binding of the function serving the request.
        agent: The agent whose conversations these are.
    """

    def __init__(self, client: df.DurableOrchestrationClient, agent: AgentRoute) -> None:
        self._client = client
        self._agent = agent
        self._entities = EntityStateReader(client, agent.entity_name)

    @property
    def agent_name(self) -> str:
        """The agent whose conversations these are."""
        return self._agent.name

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Queue an operation on the conversation's entity (the host delivers it at least once).

        Raises:
            StorageUnavailableError: the host did not accept the signal.
        """
        if operation == RUN_OPERATION:
            payload = with_trace_context(payload)  # the turn's entity operation continues this request's trace
        try:
            await self._client.signal_entity(self._entities.entity(conversation_id), operation, payload)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None
        except Exception as exc:  # the SDK raises a bare Exception naming an unexpected status
            raise StorageUnavailableError(f"the durable host refused the signal: {exc}") from None

    async def read(self, conversation_id: str) -> ConversationView | None:
        """The conversation's validated state (a deleted one's tombstone included), or None when it never existed.

        Raises:
            StateCorruptError, StateVersionError: the stored state cannot be read; it is left untouched.
            StorageUnavailableError: the host or its store could not answer.
        """
        exists, stored = await self._entities.read_stored(conversation_id)
        return ConversationView(decode_state(stored)) if exists else None

    async def read_for_delete(self, conversation_id: str) -> ConversationView | None:
        """The state as `read` gives it, or for state that cannot be read, a stand-in that exists.

        Deleting is the way out of a conversation whose stored state cannot be read, so only existence counts.
        """
        try:
            return await self.read(conversation_id)
        except (StateCorruptError, StateVersionError):
            return ConversationView.empty()

    async def wait_for_turn(self, conversation_id: str, turn_id: str, timeout: float) -> ConversationView | None:
        """Poll until the turn is settled (recorded, expired, or deleted with its conversation) or `timeout` passes.

        Returns the state that settles it, or None.
        """

        async def settled() -> ConversationView | None:
            state = await self.read(conversation_id)
            return state if state is not None and state.settles(turn_id) else None

        return await _poll(settled, timeout)

    async def wait_for_change(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """Poll until the conversation acknowledges the retention request `change_id`; returns that state, or None."""
        return await self._wait_for(conversation_id, lambda state: state.has_applied_change(change_id), timeout)

    async def wait_for_delete(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """Poll until the entity has run the delete request `change_id`; returns the state that says so, or None.

        That state is the tombstone, or a conversation a later turn started after it (failure 19).
        """
        return await self._wait_for(conversation_id, lambda state: state.has_applied_delete(change_id), timeout)

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        """The `imported` field of a turn's `run` operation (see `published_import.py`), or None."""
        return await history_to_import(self._client, self._agent, conversation_id, now_ms)

    def watch_expiry(self, conversation_id: str, clock: Clock) -> TurnExpiry:
        """Start the conversation's expiry watch alongside a turn or change; settle it with `finish`."""
        return TurnExpiry(self._client, self._agent, conversation_id, clock)

    async def _wait_for(
        self, conversation_id: str, applied: Callable[[ConversationView], bool], timeout: float
    ) -> ConversationView | None:
        """Poll until the stored state is `applied`. State that cannot be read counts as not changed yet: a deletion
        is how a caller replaces it."""

        async def probe() -> ConversationView | None:
            try:
                state = await self.read(conversation_id)
            except (StateCorruptError, StateVersionError):
                return None
            return state if state is not None and applied(state) else None

        return await _poll(probe, timeout)


async def _poll(probe: Callable[[], Awaitable[T | None]], timeout: float) -> T | None:
    """Call `probe` with a short interval that grows until it returns a value or `timeout` passes."""
    deadline = time.monotonic() + timeout
    interval = FIRST_POLL_SECONDS
    while True:
        found = await probe()
        if found is not None:
            return found
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        await asyncio.sleep(min(interval, remaining))
        interval = min(interval * POLL_GROWTH, MAX_POLL_SECONDS)
