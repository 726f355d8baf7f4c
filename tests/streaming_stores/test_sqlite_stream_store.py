"""The local host's SQLite store: its own file beside the entity store, and waking readers without polling."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from streams import fill_the_disk

from agent_host._errors import ERROR_STATUS
from agent_host._local_host.store import DATABASE_FILE_NAME, EntityStore
from agent_host._streaming import sqlite_store
from agent_host._streaming.channel import MESSAGE_DELTA, StreamEvent
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host._streaming.store_errors import StreamStoreUnavailableError


def append_later(store: SqliteStreamStore, stream: str, event_id: int, delay: float) -> threading.Thread:
    """Append one event from another thread (on its own loop), as the entity does on the agent loop."""

    def append() -> None:
        time.sleep(delay)
        asyncio.run(store.append(stream, [StreamEvent(event_id, MESSAGE_DELTA, {"text": f"part {event_id}"})]))

    thread = threading.Thread(target=append)
    thread.start()
    return thread


def test_an_append_on_another_thread_wakes_a_waiting_reader_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Polling every 30 s: only the in-process wake-up can return the event within the assertion's second.
    monkeypatch.setattr(sqlite_store, "OTHER_PROCESS_POLL_SECONDS", 30.0)
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    writer = append_later(store, "a/c/t", 1, delay=0.1)

    started = time.monotonic()
    events = asyncio.run(store.wait_for("a/c/t", after=0, timeout=20))
    waited = time.monotonic() - started
    writer.join()

    assert [event.data["text"] for event in events] == ["part 1"]
    assert waited < 1.0


def test_two_store_objects_on_one_file_share_wake_ups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_store, "OTHER_PROCESS_POLL_SECONDS", 30.0)
    entity_side = SqliteStreamStore(tmp_path / "streams.sqlite3")
    http_side = SqliteStreamStore(tmp_path / "." / "streams.sqlite3")  # the same file, named another way
    writer = append_later(entity_side, "a/c/t", 1, delay=0.1)

    started = time.monotonic()
    events = asyncio.run(http_side.wait_for("a/c/t", after=0, timeout=20))
    writer.join()

    assert [event.id for event in events] == [1]
    assert time.monotonic() - started < 1.0


def test_a_reader_sees_appends_from_another_process_by_polling(tmp_path: Path) -> None:
    path = tmp_path / "streams.sqlite3"
    reader = SqliteStreamStore(path)
    # Another process writes the row itself (plain sqlite3: it starts in milliseconds, without agent_host).
    script = (
        "import sqlite3, sys, time\n"
        "time.sleep(0.3)\n"
        "with sqlite3.connect(sys.argv[1]) as db:\n"
        "    db.execute('INSERT INTO turn_stream_events VALUES (?, ?, ?, ?)', sys.argv[2:])\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(path), "a/c/t", "1", "message.delta", '{"p": 1}'])

    started = time.monotonic()
    events = asyncio.run(reader.wait_for("a/c/t", after=0, timeout=20))
    waited = time.monotonic() - started
    writer.wait(20)

    assert events == [StreamEvent(1, "message.delta", {"p": 1})]
    assert waited < 0.3 + sqlite_store.OTHER_PROCESS_POLL_SECONDS + 1


def test_a_reader_that_times_out_returns_nothing_and_leaves_no_waiter_behind(tmp_path: Path) -> None:
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")

    events = asyncio.run(store.wait_for("a/c/t", after=0, timeout=0.05))

    assert events == []
    assert store._signals._waiting == {}


def test_the_local_host_keeps_streams_in_their_own_file_beside_the_entity_store(tmp_path: Path) -> None:
    entities = EntityStore(tmp_path)
    streams = SqliteStreamStore.in_state_dir(tmp_path)
    asyncio.run(streams.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA, {"text": "hi"})]))
    entities.close()
    reopened = EntityStore(tmp_path)  # the entity store's emptied-store check is not confused by the new file
    reopened.close()

    assert streams.path == tmp_path.resolve() / "streams.sqlite3"
    with closing(sqlite3.connect(tmp_path / DATABASE_FILE_NAME)) as connection, connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "turn_stream_events" not in tables
    with closing(sqlite3.connect(streams.path)) as connection, connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("SELECT stream, id, event, data FROM turn_stream_events").fetchall() == [
            ("a/c/t", 1, MESSAGE_DELTA, '{"text":"hi"}')
        ]


def test_a_file_that_is_not_a_database_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "streams.sqlite3"
    path.write_bytes(b"this is not a database, " * 100)

    with pytest.raises(StreamStoreUnavailableError, match="file is not a database") as raised:
        SqliteStreamStore(path)

    assert str(path) in raised.value.message
    assert (raised.value.code, ERROR_STATUS[raised.value.code]) == ("storage_unavailable", 503)


def test_a_closed_store_refuses_every_call(tmp_path: Path) -> None:
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    store.close()

    with pytest.raises(StreamStoreUnavailableError, match="the store was closed"):
        asyncio.run(store.read("a/c/t"))
    with pytest.raises(StreamStoreUnavailableError, match="the store was closed"):
        asyncio.run(store.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA)]))


def test_a_full_disk_fails_appends_with_sqlites_own_words_and_reads_go_on(tmp_path: Path) -> None:
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    asyncio.run(store.append("a/c/t", [StreamEvent(1, MESSAGE_DELTA, {"text": "kept"})]))
    fill_the_disk(store)

    with pytest.raises(StreamStoreUnavailableError) as raised:
        asyncio.run(store.append("a/c/t", [StreamEvent(2, MESSAGE_DELTA, {"text": "lost"})]))

    # SQLite rolls a full disk's transaction back itself: a second rollback would have hidden the cause.
    assert raised.value.failure == (
        f"the turn stream store (SQLite file {store.path}) could not append to stream 'a/c/t': "
        "OperationalError: database or disk is full"
    )
    assert [event.data for event in asyncio.run(store.read("a/c/t"))] == [{"text": "kept"}]
    with pytest.raises(StreamStoreUnavailableError, match="database or disk is full"):  # not a broken connection
        asyncio.run(store.append("a/c/u", [StreamEvent(1, MESSAGE_DELTA)]))
    store.close()


def file_bytes(path: Path) -> int:
    """The database and its write-ahead log, as the disk holds them."""
    return sum(part.stat().st_size for part in (path, Path(f"{path}-wal")) if part.exists())


def fill(store: SqliteStreamStore, streams: int, events: int) -> list[str]:
    names = [f"conversation_assistant/c1/turn-{n}" for n in range(streams)]
    for name in names:
        batch = [StreamEvent(i, MESSAGE_DELTA, {"text": f"word {i} " * 20}) for i in range(1, events + 1)]
        asyncio.run(store.append(name, batch))
    return names


def test_deleting_every_stream_gives_the_space_back(tmp_path: Path) -> None:
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    try:
        names = fill(store, streams=60, events=200)
        full = file_bytes(store.path)

        asyncio.run(store.delete(names))
        emptied = file_bytes(store.path)
    finally:
        store.close()

    assert full > 3_000_000
    assert emptied < 100_000  # a few pages: the file shrank and its write-ahead log was emptied


def test_a_file_made_without_incremental_vacuum_is_rebuilt_with_it_on_open(tmp_path: Path) -> None:
    path = tmp_path / "streams.sqlite3"
    with closing(sqlite3.connect(path)) as old:  # as earlier versions made it: no auto-vacuum, rows then deleted
        old.executescript(sqlite_store._SCHEMA)
        rows = [(f"s{n}", 1, MESSAGE_DELTA, "x" * 4000) for n in range(1500)]
        old.executemany("INSERT INTO turn_stream_events VALUES (?, ?, ?, ?)", rows)
        old.execute("DELETE FROM turn_stream_events")
        old.commit()
    before = path.stat().st_size

    store = SqliteStreamStore(path)
    try:
        mode = store._writer.execute("PRAGMA auto_vacuum").fetchone()[0]
        after = file_bytes(path)
    finally:
        store.close()

    assert before > 5_000_000
    assert (mode, after < 200_000) == (2, True)
