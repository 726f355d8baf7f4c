"""Waiting on a conversation by reading it again: both conversation clients' backends answer a read with the whole
state and no change notice, so every wait polls `read` with a short interval that grows, never a fixed second.

Knows the read model and the client's `read`; nothing of the backend behind it.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._conversation.view import ConversationView
from .._errors import StateCorruptError, StateVersionError

FIRST_POLL_SECONDS = 0.005
POLL_GROWTH = 1.5
MAX_POLL_SECONDS = 0.25

T = TypeVar("T")


class ReadBackWaits(ABC):
    """The reads and waits of `ConversationClient` that follow from `read`: a client implements `read`, the rest."""

    @abstractmethod
    async def read(self, conversation_id: str) -> ConversationView | None:
        """The conversation (a deleted one's tombstone included), or None when nothing was ever stored."""

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

        return await poll(settled, timeout)

    async def wait_for_change(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """Poll until the conversation acknowledges the retention request `change_id`; returns that state, or None."""
        return await self._wait_for(conversation_id, lambda state: state.has_applied_change(change_id), timeout)

    async def wait_for_delete(self, conversation_id: str, change_id: str, timeout: float) -> ConversationView | None:
        """Poll until the entity has run the delete request `change_id`; returns the state that says so, or None.

        That state is the tombstone, or a conversation a later turn started after it (failure 19).
        """
        return await self._wait_for(conversation_id, lambda state: state.has_applied_delete(change_id), timeout)

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

        return await poll(probe, timeout)


async def poll(probe: Callable[[], Awaitable[T | None]], timeout: float) -> T | None:
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
