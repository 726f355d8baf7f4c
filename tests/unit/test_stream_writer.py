"""The coalescing stream writer: what reaches the store, when, and under which ids."""

from __future__ import annotations

import asyncio
import time

import pytest
from streams import FailingTurnStreamStore, MemoryTurnStreamStore

from agent_host._streaming.channel import StreamEvent
from agent_host._streaming.events import delta_event, tool_call_event
from agent_host._streaming.writer import TurnStreamWriter

STREAM = "conversation_a/c1/t1"


def test_turn_started_and_the_first_text_are_written_at_once_then_text_waits_for_the_interval() -> None:
    store = MemoryTurnStreamStore()

    async def scenario() -> list[int]:
        writer = TurnStreamWriter(store, STREAM, interval=0.2)
        await writer.start("t1")
        await asyncio.sleep(0.02)
        after_start = len(store.appends)
        writer.add([delta_event("m", "assistant", "Hello")])
        await asyncio.sleep(0.02)
        after_first = len(store.appends)
        writer.add([delta_event("m", "assistant", " world")])
        await asyncio.sleep(0.02)
        while_waiting = len(store.appends)
        await writer.close()
        return [after_start, after_first, while_waiting, len(store.appends)]

    counts = asyncio.run(scenario())

    assert counts == [1, 2, 2, 3]
    assert [(e.id, e.event, e.data.get("text")) for e in store.events(STREAM)] == [
        (1, "turn.started", None),
        (2, "message.delta", "Hello"),
        (3, "message.delta", " world"),
    ]


def test_writes_follow_the_interval_not_the_token_count() -> None:
    store = MemoryTurnStreamStore()
    words = [f"w{number} " for number in range(200)]

    async def scenario() -> float:
        writer = TurnStreamWriter(store, STREAM, interval=0.05)
        await writer.start("t1")
        started = time.monotonic()
        for word in words:
            writer.add([delta_event("m", "assistant", word)])
            await asyncio.sleep(0.002)
        elapsed = time.monotonic() - started
        await writer.close()
        return elapsed

    elapsed = asyncio.run(scenario())

    deltas = [e for e in store.events(STREAM) if e.event == "message.delta"]
    assert "".join(e.data["text"] for e in deltas) == "".join(words)
    # turn.started, the first word at once, then at most one write per interval, and the last flush.
    assert len(store.appends) <= 3 + elapsed / 0.05
    assert len(store.appends) < len(words) / 4
    assert [e.id for e in store.events(STREAM)] == list(range(1, len(store.events(STREAM)) + 1))


def test_a_tool_event_is_written_at_once_after_the_text_before_it() -> None:
    store = MemoryTurnStreamStore()

    async def scenario() -> int:
        writer = TurnStreamWriter(store, STREAM, interval=5.0)
        await writer.start("t1")
        await asyncio.sleep(0.02)
        writer.add([delta_event("m", "assistant", "first")])
        await asyncio.sleep(0.02)
        writer.add([delta_event("m", "assistant", " second")])
        writer.add([tool_call_event("c1", "get_weather", '{"city": "Paris"}')])
        await asyncio.sleep(0.05)
        written = len(store.appends)
        await writer.close()
        return written

    written_before_close = asyncio.run(scenario())

    assert [(e.event, e.data) for e in store.events(STREAM)][1:] == [
        ("message.delta", {"messageId": "m", "role": "assistant", "text": "first"}),
        ("message.delta", {"messageId": "m", "role": "assistant", "text": " second"}),
        ("tool.call", {"callId": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}),
    ]
    assert written_before_close == 3  # started, first text, then " second" and the call together at once


def test_a_second_attempt_continues_after_the_first_and_says_which_attempt_it_is() -> None:
    store = MemoryTurnStreamStore()
    asyncio.run(
        store.append(
            STREAM,
            [
                StreamEvent(1, "turn.started", {"turnId": "t1", "attempt": 1}),
                StreamEvent(2, "message.delta", {"messageId": "m", "role": "assistant", "text": "half an ans"}),
            ],
        )
    )

    async def scenario() -> int:
        writer = TurnStreamWriter(store, STREAM)
        attempt = await writer.start("t1")
        writer.add([delta_event("m", "assistant", "a whole answer")])
        await writer.close()
        return attempt

    attempt = asyncio.run(scenario())

    assert attempt == 2
    assert [(e.id, e.event) for e in store.events(STREAM)][2:] == [(3, "turn.started"), (4, "message.delta")]
    assert store.events(STREAM)[2].data == {"turnId": "t1", "attempt": 2}


def test_a_failing_store_keeps_the_events_and_their_ids_until_a_write_succeeds() -> None:
    store = FailingTurnStreamStore()

    async def scenario() -> None:
        writer = TurnStreamWriter(store, STREAM, interval=0.01)
        await writer.start("t1")
        writer.add([delta_event("m", "assistant", "kept")])
        await asyncio.sleep(0.05)
        store.failing = False
        await writer.close()

    asyncio.run(scenario())

    assert [(e.id, e.event, e.data.get("text")) for e in store.events(STREAM)] == [
        (1, "turn.started", None),
        (2, "message.delta", "kept"),
    ]


def test_a_store_that_never_recovers_costs_only_the_stream(caplog: pytest.LogCaptureFixture) -> None:
    store = FailingTurnStreamStore()

    async def scenario() -> None:
        writer = TurnStreamWriter(store, STREAM, interval=0.01)
        await writer.start("t1")
        writer.add([delta_event("m", "assistant", "lost")])
        await writer.close()

    asyncio.run(scenario())

    assert store.events(STREAM) == []
    assert "could not be written" in caplog.text
