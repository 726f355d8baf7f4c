"""Following one turn's stream for a caller: the events the entity stored, then the last event from the receipt.

The entity writes a turn's events while it runs, on whatever instance runs it; a reader, on any instance, polls the
store for events after the last id it sent and the conversation for the turn's receipt. Once the receipt is
committed nothing more is written for the turn, so the reader sends what is left and ends with `turn.completed`
(or `turn.failed`), whose data is exactly the body a waited `POST` returns and whose id follows the last stored
event: every reader sends the same last event under the same id. A finished turn without a stream (a lost store,
a turn run without streaming) is replayed from its receipt. Knows the channel and the conversation's read model, not
the stored keys nor how the entity writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from .._clock import Clock
from .._contract import AgentRoute
from .._conversation.view import ConversationView, TurnView
from .._conversation_client.client import ConversationClient
from .._conversation_client.in_flight import may_be_pending
from .._errors import AgentHostError, ConversationNotFoundError, TurnExpiredError, TurnNotFoundError
from .._records import record_to_message
from .._settings import HostSettings
from .._streaming.channel import (
    TURN_CANCELLED,
    TURN_COMPLETED,
    TURN_FAILED,
    TURN_STARTED,
    StreamEvent,
    TurnStreamStore,
    stream_key,
)
from .._streaming.events import EventDraft, answer_events, started_event
from .._streaming.waiting import wait_for_events
from .event_stream import KEEP_ALIVE, encode_error, encode_event
from .rendering import render_approvals, render_turn

logger = logging.getLogger("agent_host.http")

# A reader waits on the store (woken by an append where the store can, polling where it cannot) and reads the
# conversation, a read of the whole state, only as often as the durable client's wait polls it.
STATE_FIRST_POLL_SECONDS = 0.02
# Past the writer's coalescing interval (50 ms): while text is coming, the conversation is not read at all.
QUIET_BEFORE_STATE_SECONDS = 0.06
STATE_MAX_POLL_SECONDS = 0.25
POLL_GROWTH = 1.5
KEEP_ALIVE_SECONDS = 15.0
READ_PAGE = 1000


@dataclass(frozen=True)
class _Finished:
    """A turn's committed receipt (a keyed retry reads its original turn), and the conversation's agent."""

    turn: TurnView
    agent_name: str | None


@dataclass
class TurnStreamReader:
    """One caller's view of one turn's stream.

    Attributes:
        conversations: The agent's conversation entities.
        store: Where streams live, or None when none is configured (a finished turn is then replayed).
        entity_name: The agent's entity name (streams are keyed by it).
        agent_name: The agent, for error messages.
        conversation_id: The conversation.
        turn_id: The turn the caller asked for.
        may_be_pending: Whether an unknown turn id may still be queued, given the conversation's state.
        deadline_seconds: How long the stream stays open at most; it ends without a last event then.
    """

    conversations: ConversationClient
    store: TurnStreamStore | None
    entity_name: str
    agent_name: str
    conversation_id: str
    turn_id: str
    may_be_pending: Callable[[ConversationView], bool]
    deadline_seconds: float
    _warned: bool = field(default=False, init=False)

    async def sse(self, after: int) -> AsyncIterator[bytes]:
        """The stream after event `after` as SSE; an error that stops it is its last event."""
        try:
            async for event in self.follow(after):
                yield KEEP_ALIVE if event is None else encode_event(event)
        except AgentHostError as error:
            yield encode_error(error)

    async def follow(self, after: int) -> AsyncIterator[StreamEvent | None]:
        """The events after `after` as they are stored, then the last one; None now and then to keep a quiet
        stream alive.

        Raises:
            ConversationNotFoundError, TurnNotFoundError, TurnExpiredError: the turn cannot be streamed.
            StorageUnavailableError, StateCorruptError: the conversation could not be read.
        """
        loop = asyncio.get_running_loop()
        started = last_sent = next_state_read = loop.time()
        stream = stream_key(self.entity_name, self.conversation_id, self.turn_id)
        cursor = after
        state_wait = STATE_FIRST_POLL_SECONDS
        while True:
            # Wait for the stream to grow until the conversation is due to be read again.
            events = await self._wait(stream, cursor, next_state_read - loop.time())
            if events:
                for event in current_attempt(events):
                    yield event
                cursor, last_sent = events[-1].id, loop.time()
                # A stream still growing is not finished: read the conversation only once it has been quiet.
                next_state_read = max(next_state_read, last_sent + QUIET_BEFORE_STATE_SECONDS)
                state_wait = STATE_FIRST_POLL_SECONDS
                continue
            now = loop.time()
            if now >= next_state_read:
                finished = self.settled(await self.conversations.read(self.conversation_id))
                if finished is not None:
                    async for event in self._finish(finished, stream, cursor, after):
                        yield event
                    return
                next_state_read = loop.time() + state_wait
                state_wait = min(state_wait * POLL_GROWTH, STATE_MAX_POLL_SECONDS)
            if now - started > self.deadline_seconds:
                return
            if now - last_sent >= KEEP_ALIVE_SECONDS:
                yield None
                last_sent = now

    def settled(self, state: ConversationView | None) -> _Finished | None:
        """The turn's receipt once it is committed; None while it may still be queued or running.

        Raises:
            ConversationNotFoundError: the conversation was deleted with the turn.
            TurnExpiredError: the turn ran, but its receipt is no longer kept.
            TurnNotFoundError: the conversation never ran, and will not run, this turn.
        """
        state = state or ConversationView.empty()
        if state.deleted_with(self.turn_id):
            raise ConversationNotFoundError(self.agent_name, self.conversation_id, deleted=True)
        turn = state.turn(self.turn_id)
        if turn is not None:
            return _Finished(turn, state.agent_name)
        if state.is_expired(self.turn_id):
            raise TurnExpiredError(self.conversation_id, self.turn_id)
        if self.may_be_pending(state):
            return None
        raise TurnNotFoundError(self.conversation_id, self.turn_id)

    async def _finish(self, finished: _Finished, stream: str, cursor: int, after: int) -> AsyncIterator[StreamEvent]:
        """What is left once the receipt is committed: the rest of the stream (or the receipt replayed), then the
        last event, each only if its id is after `after`."""
        if finished.turn.turn_id != self.turn_id and cursor == 0:
            # A retry of an Idempotency-Key reads the stream of the turn that ran for the key.
            stream = stream_key(self.entity_name, self.conversation_id, finished.turn.turn_id)
        rest = await self._read_all(stream, cursor)
        # From the store, never from the caller's Last-Event-ID: every reader numbers the last event alike.
        last_id = rest[-1].id if rest else await self._last_id(stream)
        if last_id == 0:
            # No stream at all: a turn run without streaming, or a store that lost it.
            replayed = replay(finished.turn, finished.agent_name)
            rest, last_id = replayed, len(replayed)
        for event in current_attempt(rest):
            if event.id > after:
                yield event
        final = final_event(last_id + 1, self.conversation_id, finished)
        if final.id > after:
            yield final

    async def _wait(self, stream: str, after: int, timeout: float) -> list[StreamEvent]:
        """The stream's events after `after` as soon as there are any, or none after `timeout` seconds."""
        if self.store is None:
            await asyncio.sleep(max(timeout, 0.0))
            return []
        try:
            return await wait_for_events(self.store, stream, after, max(timeout, 0.0), READ_PAGE)
        except Exception as exc:
            self._warn_unreadable(stream, exc)
            await asyncio.sleep(max(timeout, 0.0))
            return []

    async def _read(self, stream: str, after: int, limit: int) -> list[StreamEvent]:
        if self.store is None:
            return []
        try:
            return await self.store.read(stream, after=after, limit=limit)
        except Exception as exc:
            self._warn_unreadable(stream, exc)
            return []

    async def _last_id(self, stream: str) -> int:
        if self.store is None:
            return 0
        try:
            return await self.store.last_id(stream)
        except Exception as exc:
            self._warn_unreadable(stream, exc)
            return 0

    def _warn_unreadable(self, stream: str, exc: Exception) -> None:
        # The stream is the live view only: without it the turn still ends as its receipt says. Said once a reader.
        if not self._warned:
            self._warned = True
            logger.warning("Turn stream %s could not be read: %s", stream, f"{type(exc).__name__}: {exc}"[:300])

    async def _read_all(self, stream: str, after: int) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        while True:
            page = await self._read(stream, after, READ_PAGE)
            events.extend(page)
            if len(page) < READ_PAGE:
                return events
            after = page[-1].id


def turn_reader(
    conversations: ConversationClient,
    store: TurnStreamStore | None,
    agent: AgentRoute,
    conversation_id: str,
    turn_id: str,
    settings: HostSettings,
    clock: Clock,
) -> TurnStreamReader:
    """A reader of one turn of `agent`'s conversation, open as long as the turn may take (queued, then run)."""
    return TurnStreamReader(
        conversations=conversations,
        store=store,
        entity_name=agent.entity_name,
        agent_name=agent.name,
        conversation_id=conversation_id,
        turn_id=turn_id,
        may_be_pending=lambda state: may_be_pending(turn_id, state, settings, clock),
        # A turn may wait its turn behind others and then run up to the run timeout.
        deadline_seconds=settings.max_wait_seconds + settings.run_timeout_seconds,
    )


def current_attempt(events: Sequence[StreamEvent]) -> list[StreamEvent]:
    """The events to send of those read together: from the last `turn.started` on, when they hold one.

    A crash can run a turn again; the new attempt starts with its own `turn.started`, which voids what the one
    before it streamed. A reader that reads both at once sends only the new one; a reader that already sent part
    of the old one is told by the new `turn.started` to drop it.
    """
    starts = [index for index, event in enumerate(events) if event.event == TURN_STARTED]
    return list(events[starts[-1] :]) if starts else list(events)


def replay(turn: TurnView, agent_name: str | None) -> list[StreamEvent]:
    """A finished turn's events drawn from its receipt: started, the answer's messages, tool calls and approvals."""
    drafts: list[EventDraft] = [started_event(turn.turn_id, 1)]
    if turn.completed or turn.cancelled:
        messages = [record_to_message(message, agent_name) for message in turn.answer]
        drafts.extend(answer_events(messages, render_approvals(turn.approval_requests)))
    return [StreamEvent(number, event, data) for number, (event, data) in enumerate(drafts, start=1)]


def final_event(event_id: int, conversation_id: str, finished: _Finished) -> StreamEvent:
    """The last event of a turn: the body a waited `POST` of it returns."""
    body = render_turn(conversation_id, finished.turn, finished.agent_name)
    turn = finished.turn
    name = TURN_CANCELLED if turn.cancelled else TURN_COMPLETED if turn.completed else TURN_FAILED
    return StreamEvent(event_id, name, body)
