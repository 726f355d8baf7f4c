"""The turn stream store contract, the same tests for every store: SQLite, Azure Tables (Azurite) and Redis.

What producer and readers rely on: events come back in id order with their data, after an id and up to a limit;
`last_id`; deletes; re-appended ids stored once; large events whole; and all of it from any thread and event loop,
including reads racing appends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from agent_host._streaming.channel import MESSAGE_DELTA, TURN_COMPLETED, TURN_STARTED, StreamEvent, TurnStreamStore
from agent_host._streaming.waiting import wait_for_events

from .threaded import in_threads as run_in_threads

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run on a new event loop, as a caller on its own loop would."""
    return asyncio.run(coroutine)


def deltas(first: int, last: int, prefix: str = "part") -> list[StreamEvent]:
    return [StreamEvent(n, MESSAGE_DELTA, {"text": f"{prefix} {n}"}) for n in range(first, last + 1)]


def texts(events: list[StreamEvent]) -> list[tuple[int, str]]:
    return [(event.id, event.data.get("text", "")) for event in events]


def in_threads(*work: Callable[[], None]) -> None:
    """Run each callable in its own thread (each with its own event loop); re-raise the first failure."""
    run_in_threads(*work, timeout=120)


def test_events_come_back_in_order_with_their_names_and_data(store: TurnStreamStore, stream: str) -> None:
    started = StreamEvent(1, TURN_STARTED, {"turnId": "t1", "nested": {"list": [1, 2.5, None, True]}})
    unicode_delta = StreamEvent(2, MESSAGE_DELTA, {"text": 'Grüße, 世界 🌍 "quoted" \\ / # ? \u0001'})
    completed = StreamEvent(3, TURN_COMPLETED, {})

    run(store.append(stream, [started]))
    run(store.append(stream, [unicode_delta, completed]))
    events = run(store.read(stream))

    assert events == [started, unicode_delta, completed]


def test_read_after_returns_only_what_the_reader_does_not_have(store: TurnStreamStore, stream: str) -> None:
    run(store.append(stream, deltas(1, 5)))

    assert texts(run(store.read(stream, after=3))) == [(4, "part 4"), (5, "part 5")]
    assert run(store.read(stream, after=5)) == []
    assert run(store.read(stream, after=99)) == []


def test_limit_returns_the_first_events_and_the_rest_follows(store: TurnStreamStore, stream: str) -> None:
    run(store.append(stream, deltas(1, 7)))

    first = run(store.read(stream, after=0, limit=3))
    second = run(store.read(stream, after=first[-1].id, limit=3))
    third = run(store.read(stream, after=second[-1].id, limit=3))

    assert [[e.id for e in page] for page in (first, second, third)] == [[1, 2, 3], [4, 5, 6], [7]]


def test_last_id_is_the_highest_stored_id(store: TurnStreamStore, stream: str) -> None:
    assert run(store.last_id(stream)) == 0

    run(store.append(stream, deltas(1, 2)))
    after_two = run(store.last_id(stream))
    run(store.append(stream, deltas(3, 9)))

    assert after_two == 2
    assert run(store.last_id(stream)) == 9


def test_an_unknown_stream_is_empty(store: TurnStreamStore, stream: str) -> None:
    assert run(store.read(stream)) == []
    assert run(store.read(stream, after=5, limit=1)) == []
    assert run(store.last_id(stream)) == 0
    run(store.delete([stream]))  # unknown: ignored


def test_delete_removes_the_named_streams_and_only_them(store: TurnStreamStore, stream: str) -> None:
    other, kept = f"{stream}-other", f"{stream}-kept"
    for key in (stream, other, kept):
        run(store.append(key, deltas(1, 3, prefix=key)))

    run(store.delete([stream, other, f"{stream}-never-written"]))

    assert (run(store.read(stream)), run(store.last_id(stream))) == ([], 0)
    assert (run(store.read(other)), run(store.last_id(other))) == ([], 0)
    assert texts(run(store.read(kept))) == [(n, f"{kept} {n}") for n in (1, 2, 3)]


def test_a_deleted_stream_can_be_written_again_from_id_1(store: TurnStreamStore, stream: str) -> None:
    run(store.append(stream, deltas(1, 4)))
    run(store.delete([stream]))

    run(store.append(stream, deltas(1, 2, prefix="again")))

    assert texts(run(store.read(stream))) == [(1, "again 1"), (2, "again 2")]
    assert run(store.last_id(stream)) == 2


def test_reappended_ids_are_stored_once_and_the_first_write_stays(store: TurnStreamStore, stream: str) -> None:
    run(store.append(stream, deltas(1, 3, prefix="first")))

    run(store.append(stream, deltas(2, 5, prefix="retry")))  # a retried or re-run append overlapping the stored ids
    run(store.append(stream, deltas(1, 5, prefix="again")))  # wholly stored already: nothing changes

    assert texts(run(store.read(stream))) == [
        (1, "first 1"),
        (2, "first 2"),
        (3, "first 3"),
        (4, "retry 4"),
        (5, "retry 5"),
    ]
    assert run(store.last_id(stream)) == 5


def test_keys_that_differ_only_in_escaped_characters_are_different_streams(store: TurnStreamStore) -> None:
    keys = ["a/b#c", "a~2Fb#c", "a%2Fb#c", "a\\b?c", "a/b/c", "a\tb\u0085c", "a~b", "a~7Eb"]

    for index, key in enumerate(keys):
        run(store.append(key, [StreamEvent(1, MESSAGE_DELTA, {"key": key, "index": index})]))
    found = [run(store.read(key)) for key in keys]
    run(store.delete(keys))

    assert [[event.data for event in events] for events in found] == [
        [{"key": key, "index": index}] for index, key in enumerate(keys)
    ]


@pytest.mark.parametrize("size", [100 * 1024, 1536 * 1024], ids=["100KiB", "1.5MiB"])
def test_a_large_event_comes_back_whole_between_small_ones(store: TurnStreamStore, stream: str, size: int) -> None:
    # Multi-byte characters, so the store's splits fall inside UTF-8 sequences.
    big_text = ("é世🌍" * (size // 9 + 1))[: size // 3]
    events = [
        StreamEvent(1, MESSAGE_DELTA, {"text": "before"}),
        StreamEvent(2, "tool.result", {"result": big_text}),
        StreamEvent(3, MESSAGE_DELTA, {"text": "after"}),
    ]

    run(store.append(stream, events))

    assert run(store.read(stream)) == events
    assert run(store.read(stream, after=1, limit=1)) == [events[1]]
    assert run(store.read(stream, after=2)) == [events[2]]


def test_hundreds_of_events_in_one_append_come_back_in_order(store: TurnStreamStore, stream: str) -> None:
    run(store.append(stream, deltas(1, 250)))

    assert texts(run(store.read(stream, limit=1000))) == [(n, f"part {n}") for n in range(1, 251)]
    assert run(store.last_id(stream)) == 250


def test_appends_and_reads_from_different_event_loops_share_one_store(store: TurnStreamStore, stream: str) -> None:
    run(store.append(stream, deltas(1, 2)))  # this loop is closed once the append returns
    first_read = run(store.read(stream))
    run(store.append(stream, deltas(3, 3)))  # a third loop

    assert texts(first_read) == [(1, "part 1"), (2, "part 2")]
    assert [event.id for event in run(store.read(stream))] == [1, 2, 3]


def test_concurrent_appends_from_two_loops(store: TurnStreamStore, stream: str) -> None:
    # Two threads, each with its own loop: each writes its own stream, and both write the same batches to a shared
    # stream (a re-run racing the original). Every id must end up stored once, in order.
    shared = f"{stream}-shared"
    batches = [deltas(n, n + 2) for n in range(1, 60, 3)]

    def writer(name: str) -> Callable[[], None]:
        async def write() -> None:
            for batch in batches:
                await store.append(f"{stream}-{name}", batch)
                await store.append(shared, batch)

        return lambda: run(write())

    in_threads(writer("a"), writer("b"))

    expected = [(n, f"part {n}") for n in range(1, 61)]
    assert texts(run(store.read(f"{stream}-a"))) == expected
    assert texts(run(store.read(f"{stream}-b"))) == expected
    assert texts(run(store.read(shared))) == expected
    assert run(store.last_id(shared)) == 60


def test_a_reader_racing_the_writer_sees_whole_events_in_order(
    make_store: Callable[[], TurnStreamStore], stream: str
) -> None:
    writer_store, reader_store = make_store(), make_store()  # the entity's store and an HTTP request's, on one backend
    big = "x" * (700 * 1024)  # over one Table row: the event spans rows a reader must never see half of
    events = [StreamEvent(n, MESSAGE_DELTA, {"text": big if n % 10 == 0 else f"part {n}"}) for n in range(1, 41)]
    seen: list[StreamEvent] = []

    async def write() -> None:
        for start in range(0, len(events), 4):
            await writer_store.append(stream, events[start : start + 4])

    async def read() -> None:
        deadline = asyncio.get_running_loop().time() + 60
        while len(seen) < len(events) and asyncio.get_running_loop().time() < deadline:
            seen.extend(await reader_store.read(stream, after=seen[-1].id if seen else 0, limit=7))

    in_threads(lambda: run(write()), lambda: run(read()))

    assert seen == events


def test_a_waiting_reader_gets_the_next_append(make_store: Callable[[], TurnStreamStore], stream: str) -> None:
    writer_store, reader_store = make_store(), make_store()
    run(writer_store.append(stream, deltas(1, 1)))
    got: list[StreamEvent] = []

    async def wait() -> None:
        got.extend(await wait_for_events(reader_store, stream, after=1, timeout=20))

    async def write_later() -> None:
        await asyncio.sleep(0.2)
        await writer_store.append(stream, deltas(2, 3))

    in_threads(lambda: run(wait()), lambda: run(write_later()))

    assert texts(got) == [(2, "part 2"), (3, "part 3")]
    assert run(wait_for_events(reader_store, stream, after=3, timeout=0.05)) == []
    assert texts(run(wait_for_events(reader_store, stream, after=0, timeout=0))) == texts(deltas(1, 3))


@pytest.mark.parametrize(
    ("events", "complaint"),
    [
        ([StreamEvent(0, MESSAGE_DELTA)], "integers from 1"),
        ([StreamEvent(2, MESSAGE_DELTA), StreamEvent(2, MESSAGE_DELTA)], "must increase"),
        ([StreamEvent(3, MESSAGE_DELTA), StreamEvent(1, MESSAGE_DELTA)], "must increase"),
        ([StreamEvent(1, MESSAGE_DELTA, {"x": float("nan")})], "Out of range float"),
    ],
    ids=["id-zero", "repeated-id", "decreasing-ids", "not-json"],
)
def test_appends_no_store_could_keep_in_order_are_refused(
    store: TurnStreamStore, stream: str, events: list[StreamEvent], complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        run(store.append(stream, events))

    assert run(store.read(stream)) == []
