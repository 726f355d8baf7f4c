"""Waiting for a stream's next events: a store's own wake-up where it has one, polling where it does not.

`TurnStreamStore` only reads; a store that can tell a reader about an append (the local SQLite store in-process,
Redis with a blocking read) also implements `SupportsStreamWait`. Readers call `wait_for_events`, which works with
every store. Knows no backend.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

from .channel import StreamEvent, TurnStreamStore

FIRST_POLL_SECONDS = 0.02
"""The first pause of a polling reader: a coalesced producer writes about every 50 ms."""
LONGEST_POLL_SECONDS = 0.25
"""Pauses double up to this, so an idle stream costs a reader at most four reads a second."""


@runtime_checkable
class SupportsStreamWait(Protocol):
    """A store that can wake a reader when its stream grows, instead of the reader polling."""

    async def wait_for(self, stream: str, after: int, timeout: float, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events after `after` as soon as there are any, or an empty list after `timeout` seconds."""
        ...


async def wait_for_events(
    store: TurnStreamStore, stream: str, after: int, timeout: float, limit: int = 1000
) -> list[StreamEvent]:
    """The stream's events after `after` as soon as there are any, or an empty list after `timeout` seconds.

    Args:
        store: Any turn stream store; its own `wait_for` is used when it has one.
        stream: The stream key.
        after: The last event id the reader has (0 for none).
        timeout: Seconds to wait at most; 0 reads once.
        limit: Most events to return.

    Returns:
        The events, in order; empty when none came in time.
    """
    if isinstance(store, SupportsStreamWait):
        return await store.wait_for(stream, after, timeout, limit)
    return await poll_for_events(store, stream, after, timeout, limit)


async def poll_for_events(
    store: TurnStreamStore, stream: str, after: int, timeout: float, limit: int = 1000
) -> list[StreamEvent]:
    """`wait_for_events` by reading again after short pauses that double from 20 ms up to 250 ms."""
    deadline = time.monotonic() + max(timeout, 0.0)
    pause = FIRST_POLL_SECONDS
    while True:
        events = await store.read(stream, after, limit)
        remaining = deadline - time.monotonic()
        if events or remaining <= 0:
            return events
        await asyncio.sleep(min(pause, remaining))
        pause = min(pause * 2, LONGEST_POLL_SECONDS)
