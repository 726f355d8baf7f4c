"""Durable storage for the local host: entity states and the queue of acknowledged signals.

One SQLite file holds both, so a batch's new state and the removal of the signals it consumed commit together.
"""

from __future__ import annotations

import pathlib
import sqlite3
import threading
from dataclasses import dataclass

from .._clock import SYSTEM_CLOCK, Clock

DATABASE_FILE_NAME = "entities.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (name, key)
);
CREATE TABLE IF NOT EXISTS signals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    operation TEXT NOT NULL,
    input TEXT NULL,
    enqueued_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS signals_by_entity ON signals (name, key, seq);
"""


@dataclass(frozen=True)
class Signal:
    """One acknowledged, not yet processed entity operation.

    Attributes:
        seq: Position in the global queue; signals for one entity are processed in ascending order.
        name: Lower-cased entity name.
        key: Entity key.
        operation: Operation name.
        input: The operation input exactly as the client posted it (JSON text), or None when there was no body.
        enqueued_at: Unix time when the signal was accepted.
    """

    seq: int
    name: str
    key: str
    operation: str
    input: str | None
    enqueued_at: float


class EntityStore:
    """Thread-safe SQLite store for entity states and pending signals.

    Every method takes one lock, so the store can be shared by the HTTP server's event loop and the scheduler's
    worker threads. Durability: WAL journal with ``synchronous=FULL``, so an acknowledged signal survives a crash.
    """

    def __init__(self, state_dir: pathlib.Path, clock: Clock = SYSTEM_CLOCK) -> None:
        """Open (and create if needed) ``<state_dir>/entities.sqlite3``.

        Args:
            state_dir: Directory for the database file; created with its parents if missing.
            clock: Where the time a signal was accepted comes from.
        """
        self._clock = clock
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path: pathlib.Path = state_dir / DATABASE_FILE_NAME
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            str(self.path), check_same_thread=False, isolation_level=None
        )
        with self._lock:
            conn = self._connection()
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        """Return the open connection; the caller holds the lock.

        Returns:
            The SQLite connection.

        Raises:
            RuntimeError: If the store was closed.
        """
        if self._conn is None:
            raise RuntimeError("the entity store is closed")
        return self._conn

    def read_state(self, name: str, key: str) -> str | None:
        """Read an entity's serialized state.

        Args:
            name: Lower-cased entity name.
            key: Entity key.

        Returns:
            The state JSON text, or None if the entity does not exist.
        """
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT state FROM entities WHERE name = ? AND key = ?", (name, key))
                .fetchone()
            )
        return None if row is None else str(row[0])

    def write_state(self, name: str, key: str, state: str | None) -> None:
        """Write or delete an entity's state.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            state: New state JSON text; None deletes the entity.
        """
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._put_state(conn, name, key, state)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def enqueue(self, name: str, key: str, operation: str, operation_input: str | None) -> int:
        """Durably append a signal to the queue.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            operation: Operation name.
            operation_input: Raw operation input text exactly as posted, or None.

        Returns:
            The signal's sequence number.
        """
        with self._lock:
            cursor = self._connection().execute(
                "INSERT INTO signals (name, key, operation, input, enqueued_at) VALUES (?, ?, ?, ?, ?)",
                (name, key, operation, operation_input, self._clock.now_ms() / 1000),
            )
        seq = cursor.lastrowid
        if seq is None:  # pragma: no cover - sqlite always sets it after an INSERT
            raise RuntimeError("sqlite did not report the new signal's sequence number")
        return seq

    def pending(self, name: str, key: str, limit: int) -> list[Signal]:
        """List the oldest pending signals of one entity.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            limit: Maximum number of signals to return.

        Returns:
            Up to ``limit`` signals in queue order.
        """
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT seq, name, key, operation, input, enqueued_at FROM signals"
                    " WHERE name = ? AND key = ? ORDER BY seq LIMIT ?",
                    (name, key, limit),
                )
                .fetchall()
            )
        return [Signal(seq=r[0], name=r[1], key=r[2], operation=r[3], input=r[4], enqueued_at=r[5]) for r in rows]

    def entities_with_pending(self) -> list[tuple[str, str]]:
        """List the entities that have at least one pending signal.

        Returns:
            ``(name, key)`` pairs, ordered by their oldest pending signal.
        """
        with self._lock:
            rows = (
                self._connection()
                .execute("SELECT name, key FROM signals GROUP BY name, key ORDER BY MIN(seq)")
                .fetchall()
            )
        return [(str(r[0]), str(r[1])) for r in rows]

    def commit_batch(self, name: str, key: str, state: str | None, done_through_seq: int) -> None:
        """Atomically store a batch's outcome: the new state and the removal of the signals it consumed.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            state: The entity's state after the batch; None deletes the entity.
            done_through_seq: The highest sequence number in the batch; this entity's signals up to it are removed.
        """
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._put_state(conn, name, key, state)
                conn.execute(
                    "DELETE FROM signals WHERE name = ? AND key = ? AND seq <= ?", (name, key, done_through_seq)
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def discard_signals(self, name: str, key: str, seqs: list[int]) -> None:
        """Remove specific signals without touching the entity's state (used for dead-lettering).

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            seqs: Sequence numbers to remove.
        """
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "DELETE FROM signals WHERE name = ? AND key = ? AND seq = ?", [(name, key, s) for s in seqs]
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close the database; further calls raise RuntimeError. Closing twice is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @staticmethod
    def _put_state(conn: sqlite3.Connection, name: str, key: str, state: str | None) -> None:
        """Upsert or delete a state row inside the caller's transaction.

        Args:
            conn: The connection, with a transaction open.
            name: Lower-cased entity name.
            key: Entity key.
            state: New state text, or None to delete.
        """
        if state is None:
            conn.execute("DELETE FROM entities WHERE name = ? AND key = ?", (name, key))
        else:
            conn.execute(
                "INSERT INTO entities (name, key, state) VALUES (?, ?, ?)"
                " ON CONFLICT (name, key) DO UPDATE SET state = excluded.state",
                (name, key, state),
            )
