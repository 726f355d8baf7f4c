"""Turn controls in a stream store: the first cancel request's keep holds, triggers racing to list their turns as
accepted each get a place of their own, and a cancel says truly how far its record got when the store fails."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from streams import MemoryTurnStreamStore

from agent_host._errors import CancelNotRecordedError
from agent_host._http.routes import record_cancel
from agent_host._streaming.channel import StreamEvent
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host._streaming.store_errors import StreamStoreUnavailableError
from agent_host._streaming.turn_controls import TurnControls


def test_the_first_cancel_request_holds_and_the_running_mark_is_read_back(tmp_path: Path) -> None:
    controls = TurnControls(SqliteStreamStore(tmp_path / "s.sqlite3"), "conversation_a", "c1")

    asyncio.run(controls.request_cancel("t1", "nothing"))
    asyncio.run(controls.request_cancel("t1", "partial"))
    asyncio.run(controls.mark_running("t1"))

    assert asyncio.run(controls.cancel_requested("t1")) == "nothing"
    assert asyncio.run(controls.cancel_requested("t2")) is None
    assert asyncio.run(controls.is_running("t1")) and not asyncio.run(controls.is_running("t2"))


def test_concurrent_accepts_each_list_their_turn_once(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    turns = [f"t{number}" for number in range(12)]

    def accept(turn_id: str) -> None:
        # A store object per trigger, as separate requests (or instances) have.
        asyncio.run(TurnControls(SqliteStreamStore(path), "conversation_a", "c1").accept(turn_id))

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(accept, turns))
    listed = asyncio.run(TurnControls(SqliteStreamStore(path), "conversation_a", "c1").recent_accepted())

    assert sorted(listed) == sorted(turns)


def test_a_turn_sees_only_the_turns_accepted_ahead_of_it_and_none_that_withdrew(tmp_path: Path) -> None:
    controls = TurnControls(SqliteStreamStore(tmp_path / "s.sqlite3"), "conversation_a", "c1")

    places = [asyncio.run(controls.accept(turn_id)) for turn_id in ("t1", "t2", "t3")]
    asyncio.run(controls.withdraw("t2"))

    assert places == [1, 2, 3]
    assert asyncio.run(controls.recent_accepted(before=1)) == []
    assert asyncio.run(controls.recent_accepted(before=3)) == ["t1"]
    assert asyncio.run(controls.recent_accepted()) == ["t1", "t3"]


class ReadsFailing(MemoryTurnStreamStore):
    """A store that takes writes but cannot be read (it went down between the two)."""

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        raise StreamStoreUnavailableError("memory", f"read stream {stream!r}", "connection reset")


def test_a_cancel_written_but_not_read_back_says_the_turn_was_asked_to_stop() -> None:
    store = ReadsFailing()

    with pytest.raises(CancelNotRecordedError) as raised:
        asyncio.run(record_cancel(TurnControls(store, "conversation_a", "c1"), "c1", "t1", "nothing"))

    assert raised.value.message == (
        "Turn 't1' of conversation 'c1' was asked to stop, but the turn stream store (memory) could not read stream "
        "'conversation_a/c1/t1.cancel': connection reset, so whether it is stopping is not known. Retry the cancel "
        "(the first request's keep holds) or read the turn."
    )
    assert raised.value.fields == {"conversationId": "c1", "turnId": "t1"}
    assert [event.data for event in store.events("conversation_a/c1/t1.cancel")] == [{"keep": "nothing"}]
