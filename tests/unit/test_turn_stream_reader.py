"""One caller's view of a turn's stream: stored events as they come, the last event from the committed receipt."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from streams import MemoryTurnStreamStore

from agent_host._conversation.turn_receipts import key_digest
from agent_host._conversation.view import ConversationView
from agent_host._errors import ConversationNotFoundError
from agent_host._http.turn_stream import TurnStreamReader
from agent_host._streaming.channel import StreamEvent, stream_key

ENTITY = "conversation_assistant"
RECEIPT = {"status": "completed", "at": 1, "messages": [{"id": "m1", "role": "assistant", "text": "Hi Ada", "at": 1}]}


class ScriptedConversations:
    """Stands in for the durable client: each read returns the next state of a script (the last one repeats)."""

    def __init__(self, *states: dict[str, Any] | None) -> None:
        self.states = list(states)
        self.reads = 0

    async def read(self, conversation_id: str) -> ConversationView | None:
        self.reads += 1
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return None if state is None else ConversationView(state)


def finished(turn_id: str = "t1", record: dict[str, Any] = RECEIPT) -> dict[str, Any]:
    return {"agent": "assistant", "messages": [], "turns": {turn_id: record}}


def reader(
    conversations: ScriptedConversations,
    store: MemoryTurnStreamStore | None,
    turn_id: str = "t1",
    may_be_pending: Callable[[ConversationView], bool] = lambda state: True,
) -> TurnStreamReader:
    return TurnStreamReader(
        conversations=conversations,  # type: ignore[arg-type]
        store=store,
        entity_name=ENTITY,
        agent_name="assistant",
        conversation_id="c1",
        turn_id=turn_id,
        may_be_pending=may_be_pending,
        deadline_seconds=5,
    )


def follow(view: TurnStreamReader, after: int = 0) -> list[StreamEvent]:
    async def collect() -> list[StreamEvent]:
        return [event async for event in view.follow(after) if event is not None]

    return asyncio.run(collect())


def stored(store: MemoryTurnStreamStore, turn_id: str, *events: tuple[str, dict[str, Any]]) -> None:
    numbered = [StreamEvent(number, name, data) for number, (name, data) in enumerate(events, start=1)]
    asyncio.run(store.append(stream_key(ENTITY, "c1", turn_id), numbered))


def delta(text: str) -> tuple[str, dict[str, Any]]:
    return "message.delta", {"messageId": "t1.0", "role": "assistant", "text": text}


def test_the_last_event_follows_the_stored_ones_and_is_the_waited_body() -> None:
    store = MemoryTurnStreamStore()
    stored(store, "t1", ("turn.started", {"turnId": "t1", "attempt": 1}), delta("Hi "), delta("Ada"))

    events = follow(reader(ScriptedConversations(finished()), store))

    assert [(e.id, e.event) for e in events] == [
        (1, "turn.started"),
        (2, "message.delta"),
        (3, "message.delta"),
        (4, "turn.completed"),
    ]
    assert events[-1].data["text"] == "Hi Ada" and events[-1].data["turnId"] == "t1"


def test_a_reader_past_the_last_event_gets_nothing_more() -> None:
    store = MemoryTurnStreamStore()
    stored(store, "t1", ("turn.started", {"turnId": "t1", "attempt": 1}), delta("Hi Ada"))

    assert follow(reader(ScriptedConversations(finished()), store), after=3) == []
    assert [e.id for e in follow(reader(ScriptedConversations(finished()), store), after=2)] == [3]


def test_a_superseded_attempt_read_together_with_the_next_is_left_out() -> None:
    store = MemoryTurnStreamStore()
    stored(
        store,
        "t1",
        ("turn.started", {"turnId": "t1", "attempt": 1}),
        delta("Hi A"),
        ("turn.started", {"turnId": "t1", "attempt": 2}),
        delta("Hi Ada"),
    )

    events = follow(reader(ScriptedConversations(finished()), store))

    assert [(e.id, e.event, e.data.get("attempt")) for e in events] == [
        (3, "turn.started", 2),
        (4, "message.delta", None),
        (5, "turn.completed", None),
    ]


def test_without_a_stream_a_finished_turn_is_replayed_from_its_receipt() -> None:
    events = follow(reader(ScriptedConversations(finished()), None))

    assert [(e.id, e.event) for e in events] == [(1, "turn.started"), (2, "message.delta"), (3, "turn.completed")]
    assert events[1].data == {"messageId": "m1", "role": "assistant", "text": "Hi Ada"}


def test_a_retry_of_a_key_follows_the_stream_of_the_turn_that_ran_for_it() -> None:
    key = "order-42"
    original = f"1a22ff4ac62k{key_digest(key)}"
    retry = f"1a22ff4ac63k{key_digest(key)}"
    store = MemoryTurnStreamStore()
    stored(store, original, ("turn.started", {"turnId": original, "attempt": 1}), delta("Hi Ada"))
    state = finished(original, {**RECEIPT, "idempotencyKey": key})

    events = follow(reader(ScriptedConversations(state), store, turn_id=retry))

    assert [e.event for e in events] == ["turn.started", "message.delta", "turn.completed"]
    assert events[-1].data["turnId"] == original


def test_events_written_while_the_turn_runs_are_sent_as_they_come() -> None:
    store = MemoryTurnStreamStore()
    conversations = ScriptedConversations(None, None, None, finished())

    async def scenario() -> list[StreamEvent]:
        view = reader(conversations, store)
        received: list[StreamEvent] = []

        async def produce() -> None:
            await asyncio.sleep(0.05)
            await store.append(stream_key(ENTITY, "c1", "t1"), [StreamEvent(1, "turn.started", {"turnId": "t1"})])
            await asyncio.sleep(0.05)
            await store.append(stream_key(ENTITY, "c1", "t1"), [StreamEvent(2, *delta("Hi Ada"))])

        producer = asyncio.create_task(produce())
        async for event in view.follow(0):
            if event is not None:
                received.append(event)
        await producer
        return received

    events = asyncio.run(scenario())

    assert [e.event for e in events] == ["turn.started", "message.delta", "turn.completed"]
    assert events[-1].id == 3


def test_a_conversation_deleted_while_its_turn_is_streamed_ends_the_stream_with_404() -> None:
    store = MemoryTurnStreamStore()
    stored(store, "t1", ("turn.started", {"turnId": "t1", "attempt": 1}))
    tombstone = {"agent": "assistant", "deleted": {"at": 2, "existed": True, "turns": ["t1"]}}
    view = reader(ScriptedConversations(None, tombstone), store)

    async def scenario() -> list[bytes]:
        return [chunk async for chunk in view.sse(0)]

    chunks = asyncio.run(scenario())

    assert chunks[0].startswith(b"id: 1\nevent: turn.started")
    assert chunks[-1].startswith(b"event: error\n")
    assert b'"code": "conversation_not_found"' in chunks[-1] and b'"httpStatus": 404' in chunks[-1]
    with pytest.raises(ConversationNotFoundError):
        view.settled(ConversationView(tombstone))
