"""Where an app's turn streams live: the store given, or the one the settings choose, resolved once, by anyone."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from streams import MemoryTurnStreamStore

from agent_host._streaming.selection import UnconfiguredStreamStore
from agent_host._streaming.store_source import StreamStoreSource


def test_callers_racing_the_first_resolution_all_get_the_store() -> None:
    # The entity (agent loop) and a reader (HTTP loop) often ask at the same moment for the first time.
    store = MemoryTurnStreamStore()

    def slow_settings() -> MemoryTurnStreamStore:
        time.sleep(0.2)
        return store

    source = StreamStoreSource(from_settings=slow_settings)

    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda _: source(), range(8)))

    assert got == [store] * 8


def test_the_settings_are_read_once() -> None:
    calls: list[int] = []
    source = StreamStoreSource(from_settings=lambda: calls.append(1) or MemoryTurnStreamStore())

    assert source() is source()
    assert calls == [1]


def test_a_store_given_wins_and_the_settings_are_never_read() -> None:
    store = MemoryTurnStreamStore()

    def unread() -> MemoryTurnStreamStore:
        raise AssertionError("read")

    assert StreamStoreSource(store, unread)() is store


def test_settings_that_choose_no_store_give_none() -> None:
    assert StreamStoreSource(from_settings=UnconfiguredStreamStore)() is None


def test_settings_that_cannot_build_a_store_give_none_and_say_so(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> MemoryTurnStreamStore:
        raise ValueError("AGENT_HOST_STREAM_STORE must be 'sqlite:<path>'")

    assert StreamStoreSource(from_settings=broken)() is None
    assert "AGENT_HOST_STREAM_STORE must be" in caplog.text
