"""The coalescing writer of one turn's stream: what the entity appends to the store while the agent runs.

`turn.started` and the first piece of text are written at once; later text is gathered and written at most once
per interval, so storage writes follow the interval, not the token count; tool events are written as they come.
Ids continue after whatever the store already holds: a crash can run a turn again, and the new attempt's events
follow the old attempt's (its `turn.started` says which attempt it is) instead of reusing their ids. A store that
fails costs only the live view: the writer retries, then gives up and logs; the turn itself never fails for it.
Knows the channel, nothing about the entity or HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Sequence

from .channel import MESSAGE_DELTA, TURN_STARTED, StreamEvent, TurnStreamStore
from .events import EventDraft, started_event

logger = logging.getLogger("agent_host.streaming")

COALESCE_SECONDS = 0.05
"""The shortest time between two writes of text to a turn's stream."""

_PAGE = 1000


class TurnStreamWriter:
    """Writes one turn's events to its stream, coalescing text.

    Use on one event loop: `await start(...)`, then `add(...)` as the run produces events, then `await close()`.

    Args:
        store: Where the stream goes.
        stream: The stream's key (`stream_key(...)`).
        interval: The shortest time between two writes of text.
    """

    def __init__(self, store: TurnStreamStore, stream: str, *, interval: float = COALESCE_SECONDS) -> None:
        self._store = store
        self._stream = stream
        self._interval = interval
        self._pending: list[EventDraft] = []
        self._next_id = 1
        self._last_write = -math.inf
        self._urgent = asyncio.Event()
        self._wake = asyncio.Event()
        self._closing = False
        self._sent_text = False
        self._failures = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self, turn_id: str) -> int:
        """Continue after what the stream holds and write `turn.started` at once; returns the attempt number.

        A store that cannot be read leaves the writer silent: the turn runs, its stream stays as it was.
        """
        try:
            last = await self._store.last_id(self._stream)
            attempt = 1 + await self._attempts() if last else 1
        except Exception as exc:
            logger.warning("Turn stream %s cannot be read, so it is not written (%s)", self._stream, _describe(exc))
            return 0
        self._next_id = last + 1
        self._task = asyncio.get_running_loop().create_task(self._flush_loop(), name=f"stream {self._stream}")
        self.add([started_event(turn_id, attempt)], urgent=True)
        return attempt

    def add(self, drafts: Sequence[EventDraft], *, urgent: bool = False) -> None:
        """Queue events; text is merged into the piece before it, `urgent` ones are written without waiting."""
        if self._task is None or not drafts:
            return
        for event, data in drafts:
            if event == MESSAGE_DELTA:
                urgent = urgent or not self._sent_text  # the first text is written at once
                self._sent_text = True
                if self._pending and _same_message(self._pending[-1], data):
                    previous = self._pending[-1][1]
                    self._pending[-1] = (event, {**previous, "text": previous["text"] + data["text"]})
                    continue
            else:
                urgent = True
            self._pending.append((event, data))
        if urgent:
            self._urgent.set()
        self._wake.set()

    async def close(self) -> None:
        """Write what is queued and stop; after a store failure, one last try."""
        if self._task is None:
            return
        self._closing = True
        self._urgent.set()
        self._wake.set()
        await self._task
        self._task = None

    def abort(self) -> None:
        """Stop without writing what is queued (the run was cancelled; its receipt says how it ended)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _attempts(self) -> int:
        """How many attempts at the turn the stream already holds (counting their `turn.started` events)."""
        attempts, after = 0, 0
        while True:
            page = await self._store.read(self._stream, after=after, limit=_PAGE)
            attempts += sum(1 for event in page if event.event == TURN_STARTED)
            if len(page) < _PAGE:
                return max(attempts, 1)
            after = page[-1].id

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                wait = self._last_write + self._interval - loop.time()
                if wait > 0 and not self._urgent.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._urgent.wait(), wait)
                self._urgent.clear()
                if not await self._write():
                    break
            if self._closing:
                if self._pending and self._failures:
                    await self._write()  # one last try at what a failing store left queued
                return

    async def _write(self) -> bool:
        """Append everything queued as one write; on failure keep it queued (same ids next time) and back off."""
        batch = self._pending
        self._pending = []
        events = [StreamEvent(self._next_id + offset, event, data) for offset, (event, data) in enumerate(batch)]
        loop = asyncio.get_running_loop()
        try:
            await self._store.append(self._stream, events)
        except Exception as exc:
            self._pending = batch + self._pending
            self._failures += 1
            if self._failures == 1:
                logger.warning("Turn stream %s could not be written; retrying (%s)", self._stream, _describe(exc))
            if not self._closing:
                loop.call_later(min(self._interval * 2**self._failures, 2.0), self._wake.set)
            return False
        self._next_id += len(events)
        self._last_write = loop.time()
        return True


def _same_message(draft: EventDraft, data: dict[str, object]) -> bool:
    event, previous = draft
    return event == MESSAGE_DELTA and (previous["messageId"], previous["role"]) == (data["messageId"], data["role"])


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]
