"""The durable client calls the HTTP side makes: signal a conversation, read its state, wait for an outcome.

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

from .._contract import RUN_OPERATION
from .._conversation.state import APPLIED_CHANGES_KEY, DELETED_KEY, StoredState, decode_state, has_applied_delete
from .._conversation.turn_records import find_turn, is_expired
from .._errors import StateCorruptError, StateVersionError, StorageUnavailableError
from .._tracing import with_trace_context

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
        """Queue an operation on the conversation's entity (the host delivers it at least once).

        Raises:
            StorageUnavailableError: the host did not accept the signal.
        """
        if operation == RUN_OPERATION:
            payload = with_trace_context(payload)  # the turn's entity operation continues this request's trace
        try:
            await self._client.signal_entity(self._entity(conversation_id), operation, payload)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None
        except Exception as exc:  # the SDK raises a bare Exception naming an unexpected status
            raise StorageUnavailableError(f"the durable host refused the signal: {exc}") from None

    async def read(self, conversation_id: str) -> StoredState | None:
        """The conversation's validated state (a deleted one's tombstone included), or None when it never existed.

        Raises:
            StateCorruptError, StateVersionError: the stored state cannot be read; it is left untouched.
            StorageUnavailableError: the host or its store could not answer.
        """
        exists, stored = await self.read_stored(conversation_id)
        return decode_state(stored) if exists else None

    async def read_stored(self, conversation_id: str) -> tuple[bool, Any]:
        """Whether the entity exists, and its state as the host returns it (JSON text or the decoded value).

        Raises:
            StateCorruptError: the stored state is not JSON.
            StorageUnavailableError: the host or its store could not answer.
        """
        try:
            response = await self._client.read_entity_state(self._entity(conversation_id))
        except ValueError as exc:
            # The SDK parses the body before it looks at the status: only a 200 means the stored state is not JSON.
            status = await self._read_status(conversation_id)
            if status != 200:
                raise StorageUnavailableError(f"the durable host answered {status} without a readable body") from None
            raise StateCorruptError(f"is not valid JSON ({exc})") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StorageUnavailableError(f"the durable host could not be reached: {type(exc).__name__}") from None
        except Exception as exc:  # the SDK raises a bare Exception naming an unexpected status
            raise StorageUnavailableError(f"the durable host could not read the conversation: {exc}") from None
        return bool(response.entity_exists), response.entity_state

    async def _read_status(self, conversation_id: str) -> int:
        """The status the host answers a read of the conversation with, body unread (only when the SDK failed)."""
        # The binding's RPC base URL is where the SDK sends its own read; it exposes no public accessor.
        base = self._client._orchestration_bindings.rpc_base_url
        url = f"{base}{df.EntityId.get_entity_id_url_path(self._entity(conversation_id))}"
        try:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return 0

    async def read_for_delete(self, conversation_id: str) -> StoredState | None:
        """The state as `read` gives it, or for state that cannot be read, a stand-in that exists.

        Deleting is the way out of a conversation whose stored state cannot be read, so only existence counts.
        """
        try:
            return await self.read(conversation_id)
        except (StateCorruptError, StateVersionError):
            return {}

    async def wait_for_turn(self, conversation_id: str, turn_id: str, timeout: float) -> StoredState | None:
        """Poll until the turn is settled (recorded, expired, or deleted with its conversation) or `timeout` passes.

        Returns the state that settles it, or None.
        """

        async def settled() -> StoredState | None:
            state = await self.read(conversation_id)
            if state is None:
                return None
            if DELETED_KEY in state:
                return state if turn_id in state[DELETED_KEY]["turns"] else None
            _, record = find_turn(state, turn_id)
            return state if record is not None or is_expired(state, turn_id) else None

        return await _poll(settled, timeout)

    async def wait_for_change(self, conversation_id: str, change_id: str, timeout: float) -> StoredState | None:
        """Poll until the conversation acknowledges the retention request `change_id`; returns that state, or None."""
        return await self._wait_for(
            conversation_id, lambda state: change_id in state.get(APPLIED_CHANGES_KEY, ()), timeout
        )

    async def wait_for_delete(self, conversation_id: str, change_id: str, timeout: float) -> StoredState | None:
        """Poll until the entity has run the delete request `change_id`; returns the state that says so, or None.

        That state is the tombstone, or a conversation a later turn started after it (failure 19).
        """
        return await self._wait_for(conversation_id, lambda state: has_applied_delete(state, change_id), timeout)

    async def _wait_for(
        self, conversation_id: str, applied: Callable[[StoredState], bool], timeout: float
    ) -> StoredState | None:
        """Poll until the stored state is `applied`. State that cannot be read counts as not changed yet: a deletion
        is how a caller replaces it."""

        async def probe() -> StoredState | None:
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
