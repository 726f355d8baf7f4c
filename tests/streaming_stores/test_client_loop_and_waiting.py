"""A store's own loop (one for its client, whatever loop calls) and waiting on stores with and without wake-ups."""

from __future__ import annotations

import asyncio
import threading

import pytest
from streams import MemoryTurnStreamStore

from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent
from agent_host._streaming.client_loop import ClientLoop, ClientLoopClosedError
from agent_host._streaming.waiting import SupportsStreamWait, wait_for_events


async def where_am_i() -> tuple[str, int]:
    return threading.current_thread().name, id(asyncio.get_running_loop())


def test_calls_from_different_loops_run_on_the_one_client_loop() -> None:
    client_loop = ClientLoop("test-client-loop")
    try:
        first = asyncio.run(client_loop.run(where_am_i()))
        second = asyncio.run(client_loop.run(where_am_i()))
        from_a_thread: list[tuple[str, int]] = []
        thread = threading.Thread(target=lambda: from_a_thread.append(asyncio.run(client_loop.run(where_am_i()))))
        thread.start()
        thread.join()
    finally:
        client_loop.close()

    assert first[0] == "test-client-loop"
    assert first == second == from_a_thread[0]


def test_a_cancelled_caller_cancels_its_call_on_the_client_loop() -> None:
    client_loop = ClientLoop("test-client-loop")
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def caller() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await client_loop.run(slow())

    try:
        asyncio.run(caller())
        assert cancelled.wait(5)
    finally:
        client_loop.close()


def test_closing_ends_running_calls_runs_the_finish_and_refuses_later_calls() -> None:
    client_loop = ClientLoop("test-client-loop")
    started, finished = threading.Event(), threading.Event()
    outcome: list[BaseException] = []

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    async def finish() -> None:
        finished.set()

    def call_forever() -> None:
        try:
            asyncio.run(client_loop.run(forever()))
        except BaseException as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call_forever)
    caller.start()
    assert started.wait(5)
    client_loop.close(finish)
    caller.join(5)

    assert finished.is_set()
    assert [type(exc) for exc in outcome] == [asyncio.CancelledError]
    with pytest.raises(ClientLoopClosedError):
        asyncio.run(client_loop.run(where_am_i()))


class WakingStore(MemoryTurnStreamStore):
    """A store with its own wait: `wait_for_events` must use it rather than poll."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[tuple[str, int, float, int]] = []

    async def wait_for(self, stream: str, after: int, timeout: float, limit: int = 1000) -> list[StreamEvent]:
        self.waits.append((stream, after, timeout, limit))
        return [StreamEvent(after + 1, MESSAGE_DELTA)]


def test_a_store_with_its_own_wait_is_waited_on_not_polled() -> None:
    store = WakingStore()

    events = asyncio.run(wait_for_events(store, "a/c/t", after=4, timeout=9, limit=3))

    assert isinstance(store, SupportsStreamWait)
    assert events == [StreamEvent(5, MESSAGE_DELTA)]
    assert (store.waits, store.reads) == ([("a/c/t", 4, 9, 3)], 0)


def test_a_store_without_one_is_polled_with_pauses_that_double() -> None:
    store = MemoryTurnStreamStore()

    async def append_later() -> list[StreamEvent]:
        waiting = asyncio.ensure_future(wait_for_events(store, "a/c/t", after=0, timeout=10))
        await asyncio.sleep(0.6)
        await store.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA, {"text": "late"})])
        return await waiting

    events = asyncio.run(append_later())
    reads_while_waiting = store.reads
    timed_out = asyncio.run(wait_for_events(store, "a/c/t", after=1, timeout=0.05))

    assert isinstance(store, SupportsStreamWait) is False
    assert events == [StreamEvent(1, MESSAGE_DELTA, {"text": "late"})]
    # Reads at about 0, 20, 60, 140, 300, 550 and 800 ms: seven, where a fixed 20 ms pause would make thirty.
    assert 5 <= reads_while_waiting <= 9
    assert timed_out == []
