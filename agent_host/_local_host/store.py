"""Durable storage for the local host: entity states and the queue of acknowledged signals.

One SQLite file holds both, so a batch's new state and the removal of the signals it consumed commit together. The
same file holds the orchestration tables (``schema.ORCHESTRATION_SCHEMA``), so an entity batch and the responses it
owes orchestrations commit in one transaction too; :class:`OrchestrationStore` works on them through
:meth:`EntityStore.transaction` and :meth:`EntityStore.reading`.
Every failure of the file (full disk, I/O error, damaged page) surfaces as a :class:`StorageError`, never as an
error of the entity or request that needed the store.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .._clock import SYSTEM_CLOCK, Clock
from .outbox import Message, write_messages
from .schema import ENTITY_SCHEMA, ENTITY_TABLES, ORCHESTRATION_SCHEMA, SIGNAL_COLUMNS_ADDED

DATABASE_FILE_NAME = "entities.sqlite3"
MANIFEST_FILE_NAME = "entities.manifest.json"
"""Written beside the database once it is created; while it exists, a missing or emptied database is refused."""


class StorageError(Exception):
    """The store could not read or write its file: a full disk, an I/O error, a damaged database page.

    Not an error of the entity or request that needed the store: signals stay queued and are retried, outcomes
    already computed are kept and their commit retried, and requests are answered 503.

    Attributes:
        cause: What went wrong in a few words, e.g. ``database or disk is full`` (SQLite's own words).
    """

    def __init__(self, message: str, *, cause: str) -> None:
        """Describe one failure.

        Args:
            message: The whole explanation, naming the file.
            cause: What went wrong in a few words.
        """
        super().__init__(message)
        self.cause = cause


class EmptiedStoreError(StorageError):
    """The state directory held a store (its manifest says so) whose database is now missing or holds nothing."""

    def __init__(self, path: pathlib.Path, manifest: pathlib.Path, problem: str) -> None:
        """Describe the lost database and how to proceed.

        Args:
            path: The database file.
            manifest: The manifest that records the database was created.
            problem: What is wrong with the file, e.g. ``is empty (0 bytes)``.
        """
        super().__init__(
            f"{path} {problem}, but {manifest} records that this directory held an entity store: its conversations "
            f"and queued signals are not there. The local host did not start, so nothing was overwritten. Restore "
            f"{path.name} from a backup, or delete {manifest} to start over with an empty store.",
            cause=f"{path.name} {problem}",
        )


def _failure(path: pathlib.Path, action: str, exc: BaseException) -> StorageError:
    """Wrap what SQLite or the OS raised.

    Args:
        path: The database file.
        action: What the store was doing, e.g. ``commit a batch``.
        exc: The error raised.

    Returns:
        The storage error to raise from ``exc``.
    """
    return StorageError(f"The entity store {path} could not {action}: {exc}.", cause=str(exc))


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
        request_id: For an orchestration's ``call_entity``, the id its response event carries; None for a signal.
        parent_instance_id: The orchestration that called or signalled, if one did.
        parent_execution_id: That orchestration's execution.
    """

    seq: int
    name: str
    key: str
    operation: str
    input: str | None
    enqueued_at: float
    request_id: str | None = None
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None


class EntityStore:
    """Thread-safe SQLite store for entity states and pending signals.

    Every method takes one lock, so the store can be shared by the HTTP server's event loop and the scheduler's
    worker threads. Durability: WAL journal with ``synchronous=FULL``, so an acknowledged signal survives a crash.
    Every method raises :class:`StorageError` when the file fails.
    """

    def __init__(self, state_dir: pathlib.Path, clock: Clock = SYSTEM_CLOCK) -> None:
        """Open (and create if needed) ``<state_dir>/entities.sqlite3`` and its manifest.

        Args:
            state_dir: Directory for the database file; created with its parents if missing.
            clock: Where the time a signal was accepted comes from.

        Raises:
            EmptiedStoreError: The manifest exists but the database is missing, empty or without its tables.
            StorageError: The database cannot be opened (not a database, unreadable, full disk).
        """
        self._clock = clock
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path: pathlib.Path = state_dir / DATABASE_FILE_NAME
        self.manifest_path: pathlib.Path = state_dir / MANIFEST_FILE_NAME
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        created_before = self.manifest_path.exists()
        if created_before and not self.path.exists():
            raise EmptiedStoreError(self.path, self.manifest_path, "is missing")
        if created_before and self.path.stat().st_size == 0:
            raise EmptiedStoreError(self.path, self.manifest_path, "is empty (0 bytes)")
        try:
            conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise _failure(self.path, "open the database", exc) from exc
        try:
            # Checked before anything writes to the file: a refused database is left exactly as it was found.
            if created_before and not _has_tables(conn):
                raise EmptiedStoreError(self.path, self.manifest_path, "holds none of the local host's tables")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(ENTITY_SCHEMA)
            conn.executescript(ORCHESTRATION_SCHEMA)
            _add_signal_columns(conn)
            self._unlimited_pages = int(conn.execute("PRAGMA max_page_count").fetchone()[0])
        except sqlite3.Error as exc:
            conn.close()
            raise _failure(self.path, "open the database", exc) from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        if not created_before:
            self._write_manifest()

    def _write_manifest(self) -> None:
        """Record that the database exists, so a later start can tell an emptied store from a new one.

        Raises:
            StorageError: The manifest cannot be written.
        """
        manifest = {
            "database": DATABASE_FILE_NAME,
            "about": "Written by agent_host's local host when it created the database. While this file exists, "
            "the local host refuses to start on a missing or emptied database instead of starting empty.",
        }
        try:
            self.manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            self.close()
            raise _failure(self.path, f"write its manifest {self.manifest_path}", exc) from exc

    @contextlib.contextmanager
    def _using(self, action: str) -> Iterator[sqlite3.Connection]:
        """Hold the lock and the connection; turn SQLite and OS failures into :class:`StorageError`.

        Args:
            action: What the caller is doing, for the error message.

        Yields:
            The open connection.

        Raises:
            RuntimeError: If the store was closed.
            StorageError: If SQLite or the OS failed.
        """
        with self._lock:
            if self._conn is None:
                raise RuntimeError("the entity store is closed")
            try:
                yield self._conn
            except (sqlite3.Error, OSError) as exc:
                raise _failure(self.path, action, exc) from exc

    @contextlib.contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """Run the body in one write transaction, rolled back when anything in it fails.

        Args:
            action: What the caller is doing, for the error message.

        Yields:
            The connection, with a transaction open.

        Raises:
            StorageError: If SQLite or the OS failed; nothing of the transaction was stored.
        """
        with self._using(action) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                # SQLite may already have rolled back (it does on SQLITE_FULL); a failing ROLLBACK must not hide why.
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise

    def transaction(self, action: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction on the shared connection, for the other tables of this file (orchestrations).

        Args:
            action: What the caller is doing, for the error message.

        Returns:
            A context manager yielding the connection with a transaction open; it commits on success and rolls back
            (raising :class:`StorageError` for SQLite and OS failures) otherwise.
        """
        return self._transaction(action)

    def reading(self, action: str) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """The shared connection under the store's lock, for reads of the other tables of this file.

        Args:
            action: What the caller is doing, for the error message.

        Returns:
            A context manager yielding the connection; SQLite and OS failures raise :class:`StorageError`.
        """
        return self._using(action)

    def read_state(self, name: str, key: str) -> str | None:
        """Read an entity's serialized state.

        Args:
            name: Lower-cased entity name.
            key: Entity key.

        Returns:
            The state JSON text, or None if the entity does not exist.
        """
        with self._using("read an entity's state") as conn:
            row = conn.execute("SELECT state FROM entities WHERE name = ? AND key = ?", (name, key)).fetchone()
        return None if row is None else str(row[0])

    def list_entities(
        self, name: str, *, after_key: str | None, limit: int, with_state: bool
    ) -> list[tuple[str, str | None]]:
        """List one entity function's entities in key order, a page at a time (the webhook API's entity query).

        Args:
            name: Lower-cased entity name.
            after_key: List only keys after this one (the previous page's last key); None starts at the first.
            limit: Most entities to return.
            with_state: Return each entity's state text too (None in its place otherwise).

        Returns:
            ``(key, state)`` pairs in ascending key order.
        """
        column = "state" if with_state else "NULL"
        with self._using("list entities") as conn:
            rows = conn.execute(
                f"SELECT key, {column} FROM entities WHERE name = ? AND key > ? ORDER BY key LIMIT ?",
                (name, after_key if after_key is not None else "", limit),
            ).fetchall()
        return [(str(row[0]), None if row[1] is None else str(row[1])) for row in rows]

    def write_state(self, name: str, key: str, state: str | None) -> None:
        """Write or delete an entity's state.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            state: New state JSON text; None deletes the entity.
        """
        with self._transaction("write an entity's state") as conn:
            self._put_state(conn, name, key, state)

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
        with self._using("queue a signal") as conn:
            cursor = conn.execute(
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
        with self._using("read queued signals") as conn:
            rows = conn.execute(
                "SELECT seq, name, key, operation, input, enqueued_at, request_id, parent_instance_id,"
                " parent_execution_id FROM signals WHERE name = ? AND key = ? ORDER BY seq LIMIT ?",
                (name, key, limit),
            ).fetchall()
        return [Signal(*row) for row in rows]

    def entities_with_pending(self) -> list[tuple[str, str]]:
        """List the entities that have at least one pending signal.

        Returns:
            ``(name, key)`` pairs, ordered by their oldest pending signal.
        """
        with self._using("read queued signals") as conn:
            rows = conn.execute("SELECT name, key FROM signals GROUP BY name, key ORDER BY MIN(seq)").fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def commit_batch(
        self, name: str, key: str, state: str | None, done_through_seq: int, messages: Sequence[Message] = ()
    ) -> None:
        """Atomically store a batch's outcome: the new state, the removal of the signals it consumed, its messages.

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            state: The entity's state after the batch; None deletes the entity.
            done_through_seq: The highest sequence number in the batch; this entity's signals up to it are removed.
            messages: What the batch sends: responses to orchestrations that called it, signals to other entities.
        """
        with self._transaction("commit a batch") as conn:
            self._put_state(conn, name, key, state)
            conn.execute("DELETE FROM signals WHERE name = ? AND key = ? AND seq <= ?", (name, key, done_through_seq))
            write_messages(conn, messages)

    def discard_signals(self, name: str, key: str, seqs: list[int], messages: Sequence[Message] = ()) -> None:
        """Remove specific signals without touching the entity's state (used for dead-lettering).

        Args:
            name: Lower-cased entity name.
            key: Entity key.
            seqs: Sequence numbers to remove.
            messages: Sent in the same transaction (the failure response a dead-lettered call still owes its caller).
        """
        with self._transaction("discard signals") as conn:
            conn.executemany(
                "DELETE FROM signals WHERE name = ? AND key = ? AND seq = ?", [(name, key, s) for s in seqs]
            )
            write_messages(conn, messages)

    def limit_pages(self, max_pages: int | None) -> None:
        """Fault injection for tests: a full disk. SQLite refuses to grow the database past ``max_pages`` pages.

        Writes that need a new page then fail with SQLite's own SQLITE_FULL ("database or disk is full"), as on a
        disk with no space left; a limit under the current size means the current size.

        Args:
            max_pages: The most pages the database may hold; None lifts the limit.
        """
        pages = self._unlimited_pages if max_pages is None else max(1, int(max_pages))
        with self._using("limit its size") as conn:
            conn.execute(f"PRAGMA max_page_count = {pages}")

    def page_count(self) -> int:
        """How many pages the database holds now (see :meth:`limit_pages`).

        Returns:
            The page count.
        """
        with self._using("count its pages") as conn:
            return int(conn.execute("PRAGMA page_count").fetchone()[0])

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


def _add_signal_columns(conn: sqlite3.Connection) -> None:
    """Add the columns orchestrations need to a signals table written by an earlier version (data is kept).

    Args:
        conn: An open connection.
    """
    present = {str(row[1]) for row in conn.execute("PRAGMA table_info(signals)")}
    for column in SIGNAL_COLUMNS_ADDED:
        if column not in present:
            conn.execute(f"ALTER TABLE signals ADD COLUMN {column} TEXT NULL")


def _has_tables(conn: sqlite3.Connection) -> bool:
    """Tell whether the database holds the local host's tables.

    Args:
        conn: An open connection.

    Returns:
        True when every table of the schema exists.
    """
    names = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return set(ENTITY_TABLES) <= names
