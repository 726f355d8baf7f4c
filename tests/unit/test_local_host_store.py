"""Unit tests for the local host's SQLite entity store: states, the signal queue and atomic batch commits."""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3
import threading
from collections.abc import Iterator

import pytest

from agent_host._local_host.store import DATABASE_FILE_NAME, EntityStore, StorageError


@pytest.fixture
def store(tmp_path: pathlib.Path) -> Iterator[EntityStore]:
    """An open store in a fresh directory, closed after the test."""
    opened = EntityStore(tmp_path / "state")
    yield opened
    opened.close()


def test_creates_the_directory_and_uses_wal(tmp_path: pathlib.Path) -> None:
    """The store creates its directory and puts the database in WAL mode."""
    state_dir = tmp_path / "nested" / "state"
    store = EntityStore(state_dir)
    store.close()
    assert (state_dir / DATABASE_FILE_NAME).is_file()
    # closing(): a sqlite3 connection's own context manager only commits; Python 3.13 warns about the unclosed one.
    with contextlib.closing(sqlite3.connect(state_dir / DATABASE_FILE_NAME)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_state_round_trip_and_delete(store: EntityStore) -> None:
    """States are upserted per (name, key) and None deletes only that entity."""
    assert store.read_state("counter", "a") is None
    store.write_state("counter", "a", "1")
    store.write_state("counter", "a", "2")
    store.write_state("counter", "b", '{"x": 1}')
    assert store.read_state("counter", "a") == "2"
    assert store.read_state("counter", "b") == '{"x": 1}'
    store.write_state("counter", "a", None)
    assert store.read_state("counter", "a") is None
    assert store.read_state("counter", "b") == '{"x": 1}'


def test_queue_order_limit_and_entities_with_pending(store: EntityStore) -> None:
    """Pending signals come back per entity in queue order, limited, with raw inputs intact."""
    first = store.enqueue("counter", "b", "add", '"1"')
    second = store.enqueue("counter", "a", "add", None)
    third = store.enqueue("counter", "b", "reset", '"{}"')
    assert first < second < third

    pending_b = store.pending("counter", "b", 10)
    assert [(s.seq, s.operation, s.input) for s in pending_b] == [(first, "add", '"1"'), (third, "reset", '"{}"')]
    assert [s.seq for s in store.pending("counter", "b", 1)] == [first]
    assert store.pending("counter", "a", 10)[0].input is None
    assert store.pending("counter", "zzz", 10) == []
    assert store.entities_with_pending() == [("counter", "b"), ("counter", "a")]


def test_commit_batch_writes_state_and_removes_only_consumed_signals(store: EntityStore) -> None:
    """A commit stores the state and drops exactly this entity's signals up to the given seq."""
    seqs = [store.enqueue("counter", "a", "add", '"1"') for _ in range(3)]
    other = store.enqueue("counter", "b", "add", '"1"')

    store.commit_batch("counter", "a", "2", done_through_seq=seqs[1])

    assert store.read_state("counter", "a") == "2"
    assert [s.seq for s in store.pending("counter", "a", 10)] == [seqs[2]]
    assert [s.seq for s in store.pending("counter", "b", 10)] == [other]

    store.commit_batch("counter", "a", None, done_through_seq=seqs[2])
    assert store.read_state("counter", "a") is None
    assert store.entities_with_pending() == [("counter", "b")]


def test_failed_commit_rolls_back_state_and_keeps_signals(store: EntityStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit that fails midway changes nothing: old state and all signals remain."""
    store.write_state("counter", "a", "1")
    seq = store.enqueue("counter", "a", "add", '"1"')
    original = EntityStore._put_state

    def put_then_fail(conn: sqlite3.Connection, name: str, key: str, state: str | None) -> None:
        original(conn, name, key, state)
        raise OSError("simulated crash mid-transaction")

    monkeypatch.setattr(EntityStore, "_put_state", staticmethod(put_then_fail))
    with pytest.raises(StorageError, match="could not commit a batch: simulated crash"):
        store.commit_batch("counter", "a", "2", done_through_seq=seq)
    monkeypatch.undo()

    assert store.read_state("counter", "a") == "1"
    assert [s.seq for s in store.pending("counter", "a", 10)] == [seq]
    store.commit_batch("counter", "a", "2", done_through_seq=seq)
    assert store.read_state("counter", "a") == "2"


def test_discard_signals_leaves_state_alone(store: EntityStore) -> None:
    """Dead-lettering removes the chosen signals and keeps the state."""
    store.write_state("counter", "a", "7")
    keep = store.enqueue("counter", "a", "add", '"1"')
    drop = store.enqueue("counter", "a", "add", '"2"')
    store.discard_signals("counter", "a", [drop])
    assert [s.seq for s in store.pending("counter", "a", 10)] == [keep]
    assert store.read_state("counter", "a") == "7"


def test_everything_survives_reopening(tmp_path: pathlib.Path) -> None:
    """State and queued signals survive closing and reopening; sequence numbers keep growing."""
    first = EntityStore(tmp_path)
    first.write_state("counter", "a", "3")
    seq = first.enqueue("counter", "a", "add", '"4"')
    first.close()
    first.close()  # closing twice is harmless

    second = EntityStore(tmp_path)
    try:
        assert second.read_state("counter", "a") == "3"
        pending = second.pending("counter", "a", 10)
        assert [(s.seq, s.input) for s in pending] == [(seq, '"4"')]
        assert second.enqueue("counter", "a", "add", None) > seq
    finally:
        second.close()


def test_closed_store_refuses_use(tmp_path: pathlib.Path) -> None:
    """Using a closed store raises instead of silently reopening."""
    store = EntityStore(tmp_path)
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.read_state("counter", "a")


def test_concurrent_enqueues_from_threads_get_distinct_sequence_numbers(store: EntityStore) -> None:
    """Enqueues from several threads are all stored with distinct sequence numbers."""
    results: list[int] = []
    results_lock = threading.Lock()

    def worker(key: str) -> None:
        for _ in range(25):
            seq = store.enqueue("counter", key, "add", '"1"')
            with results_lock:
                results.append(seq)

    threads = [threading.Thread(target=worker, args=(f"k{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == len(set(results)) == 100
    assert sorted(store.entities_with_pending()) == [("counter", f"k{i}") for i in range(4)]
    assert all(len(store.pending("counter", f"k{i}", 100)) == 25 for i in range(4))
