"""The durable client calls the HTTP side makes: signal a conversation, read its state, wait for a turn.

`read_entity_state` returns the whole state, so every poll costs a read of the full conversation: poll with a
short interval that grows, never a fixed second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import azure.durable_functions as df

from .._conversation.state import decode_state
from .._errors import StateCorruptError

FIRST_POLL_SECONDS = 0.005
POLL_GROWTH = 1.5
MAX_POLL_SECONDS = 0.25

T = TypeVar("T")


class ConversationClient:
    """One agent's conversation entities, seen through the durable client binding."""

    def __init__(self, client: df.DurableOrchestrationClient, entity_name: str) -> None:
        self._client = client
        self._entity_name = entity_name

    def _entity(self, conversation_id: str) -> df.EntityId:
        return df.EntityId(self._entity_name, conversation_id)

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Queue an operation on the conversation's entity (the host delivers it at least once)."""
        await self._client.signal_entity(self._entity(conversation_id), operation, payload)

    async def read(self, conversation_id: str) -> dict[str, Any] | None:
        """The conversation's validated state, or None when the entity does not exist.

        Raises:
            StateCorruptError, StateVersionError: the stored state cannot be read; it is left untouched.
        """
        try:
            response = await self._client.read_entity_state(self._entity(conversation_id))
        except ValueError as exc:
            raise StateCorruptError(
                f"The stored conversation is not valid JSON ({exc}). It was left unchanged."
            ) from None
        if not response.entity_exists:
            return None
        return decode_state(response.entity_state)

    async def exists(self, conversation_id: str) -> bool:
        """Whether the conversation's entity exists, whether or not its state can be read."""
        try:
            response = await self._client.read_entity_state(self._entity(conversation_id))
        except ValueError:  # the stored state is not JSON, but it is there
            return True
        return bool(response.entity_exists)

    async def wait_for_turn(self, conversation_id: str, turn_id: str, timeout: float) -> dict[str, Any] | None:
        """Poll until the turn has a record or `timeout` passes; returns the state holding the record, or None."""

        async def recorded() -> dict[str, Any] | None:
            state = await self.read(conversation_id)
            return state if state is not None and turn_id in state.get("turns", {}) else None

        return await _poll(recorded, timeout)

    async def wait_until_gone(self, conversation_id: str, timeout: float) -> bool:
        """Poll until the entity no longer exists; True when it is gone within `timeout`."""

        async def gone() -> bool | None:
            return None if await self.exists(conversation_id) else True

        return bool(await _poll(gone, timeout))

    async def wait_for_retention(
        self, conversation_id: str, retention: dict[str, Any], timeout: float
    ) -> dict[str, Any] | None:
        """Poll until the conversation's stored retention settings equal `retention`; returns that state, or None."""

        async def applied() -> dict[str, Any] | None:
            state = await self.read(conversation_id)
            return state if state is not None and state.get("retention") == retention else None

        return await _poll(applied, timeout)


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
