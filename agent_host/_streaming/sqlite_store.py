"""The local host's turn stream store: one SQLite file beside the entity store, and an in-process wake-up on append.

`python -m agent_host serve` runs the entity (on the agent loop's thread) and the HTTP routes (on the server's loop)
in one process, so an append wakes waiting readers directly, within a millisecond, on whatever loop they wait on;
the file makes the stream readable by any reader, and a reader in another process still sees appends by polling.
Knows nothing about entities or HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .channel import StreamEvent
from .event_codec import check_append, check_read, decode_data, encode_data
from .store_errors import StreamStoreUnavailableError

T = TypeVar("T")

STREAMS_FILE_NAME = "streams.sqlite3"
"""The file in the local host's state directory, beside (not inside) ``entities.sqlite3``."""
OTHER_PROCESS_POLL_SECONDS = 0.25
"""A waiting reader also reads this often, for appends made by another process on the same file."""
BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another process's write lock on the file before it fails."""
_DELETE_BATCH = 500
WAL_SIZE_LIMIT_BYTES = 1024 * 1024
"""The write-ahead log is cut back to this size whenever a checkpoint empties it (SQLite keeps its largest size)."""
_INCREMENTAL_VACUUM = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turn_stream_events (
    stream TEXT NOT NULL,
    id INTEGER NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (stream, id)
) WITHOUT ROWID;
"""


@dataclass(eq=False)
class _Waiter:
    """One reader waiting on one stream: the loop it waits on and what wakes it there."""

    loop: asyncio.AbstractEventLoop
    woken: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        """Set `woken` on the reader's own loop; asyncio objects may only be touched from their loop's thread."""
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there any more
            self.loop.call_soon_threadsafe(self.woken.set)


class _AppendSignals:
    """The readers waiting on the streams of one database file, shared by every store object on that file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, set[_Waiter]] = {}

    def add(self, stream: str, waiter: _Waiter) -> None:
        with self._lock:
            self._waiting.setdefault(stream, set()).add(waiter)

    def discard(self, stream: str, waiter: _Waiter) -> None:
        with self._lock:
            waiters = self._waiting.get(stream)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[stream]

    def notify(self, stream: str) -> None:
        with self._lock:
            waiters = list(self._waiting.get(stream, ()))
        for waiter in waiters:
            waiter.wake()


_SIGNALS_BY_FILE: dict[pathlib.Path, _AppendSignals] = {}
_SIGNALS_LOCK = threading.Lock()


def _signals_for(path: pathlib.Path) -> _AppendSignals:
    """The process-wide signals of one file: a producer and a reader may each have opened their own store object."""
    with _SIGNALS_LOCK:
        return _SIGNALS_BY_FILE.setdefault(path, _AppendSignals())


class SqliteStreamStore:
    """Turn streams in one SQLite file (WAL), safe to share across threads and event loops.

    Appends and deletes go through one connection and reads through another, each behind its own lock: in WAL mode a
    read never waits for a write, so the HTTP loop's readers are not held up by the agent loop's appends. Statements
    take well under a millisecond and run on the calling loop's thread. Every method raises
    `StreamStoreUnavailableError` when the file fails.
    """

    def __init__(self, path: str | pathlib.Path) -> None:
        """Open (and create if needed) the database file.

        Args:
            path: The SQLite file; its folder is created if missing.

        Raises:
            StreamStoreUnavailableError: The file cannot be created or opened as a database.
        """
        self.path = pathlib.Path(path).expanduser().resolve()
        self._signals = _signals_for(self.path)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = self._connect()
            _reclaim_deleted_pages(self._writer)
            # Durable across a crash of the process; a power cut may lose the last appends, which costs only the
            # live view of a turn (its receipt is the record), not worth an fsync on every coalesced delta.
            self._writer.execute("PRAGMA journal_mode=WAL")
            self._writer.execute("PRAGMA synchronous=NORMAL")
            self._writer.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
            self._writer.executescript(_SCHEMA)
            self._reader = self._connect()
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise self._failure("open the database", exc) from exc
        # A store an app never closes (it lives as long as the app) still closes its files when it is collected:
        # Python 3.13 warns about a connection left open to the garbage collector.
        weakref.finalize(self, _close_connections, self._writer, self._reader)

    @classmethod
    def in_state_dir(cls, state_dir: str | pathlib.Path) -> SqliteStreamStore:
        """The store of a local host whose entity state lives in `state_dir` (``<state_dir>/streams.sqlite3``)."""
        return cls(pathlib.Path(state_dir) / STREAMS_FILE_NAME)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return connection

    def _failure(self, action: str, cause: BaseException | str) -> StreamStoreUnavailableError:
        return StreamStoreUnavailableError(f"SQLite file {self.path}", action, cause)

    def _using(self, writing: bool, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the writing or the reading connection, holding its lock; SQLite and OS failures become
        `StreamStoreUnavailableError`."""
        lock = self._write_lock if writing else self._read_lock
        with lock:
            connection = self._writer if writing else self._reader
            if connection is None:
                raise self._failure(action, "the store was closed")
            try:
                return work(connection)
            except (sqlite3.Error, OSError) as exc:
                raise self._failure(action, exc) from exc

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        """Add events to the end of a stream; events whose id is not above the stream's last id are skipped.

        Skipping makes a repeated append (a retried write, a re-run turn) harmless: the first write of an id stays.
        Readers waiting on the stream in this process are woken once the events are committed.
        """
        check_append(stream, events)
        if not events:
            return
        rows = [(stream, event.id, event.event, encode_data(event.data)) for event in events]

        def insert(connection: sqlite3.Connection) -> int:
            connection.execute("BEGIN IMMEDIATE")
            try:
                last = _last_id(connection, stream)
                fresh = [row for row in rows if row[1] > last]
                connection.executemany(
                    "INSERT INTO turn_stream_events (stream, id, event, data) VALUES (?, ?, ?, ?)", fresh
                )
                connection.execute("COMMIT")
            except BaseException:
                # SQLite has already rolled back after some failures (a full disk: SQLITE_FULL), and a second
                # rollback would hide the cause behind "no transaction is active".
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            return len(fresh)

        if self._using(True, f"append to stream {stream!r}", insert):
            self._signals.notify(stream)

    async def read(self, stream: str, after: int = 0, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events with ids greater than `after`, in order, at most `limit` of them."""
        check_read(after, limit)

        def select(connection: sqlite3.Connection) -> list[tuple[int, str, str]]:
            return connection.execute(
                "SELECT id, event, data FROM turn_stream_events WHERE stream = ? AND id > ? ORDER BY id LIMIT ?",
                (stream, after, limit),
            ).fetchall()

        found = self._using(False, f"read stream {stream!r}", select)
        return [StreamEvent(event_id, name, decode_data(data)) for event_id, name, data in found]

    async def last_id(self, stream: str) -> int:
        """The id of the stream's last stored event, 0 for an empty or unknown stream."""
        return self._using(False, f"read stream {stream!r}", lambda connection: _last_id(connection, stream))

    async def delete(self, streams: Sequence[str]) -> None:
        """Delete these streams entirely (unknown ones are ignored)."""
        keys = list(dict.fromkeys(streams))

        def remove(connection: sqlite3.Connection) -> None:
            for batch in _batches(keys, _DELETE_BATCH):
                marks = ",".join("?" * len(batch))
                connection.execute(f"DELETE FROM turn_stream_events WHERE stream IN ({marks})", batch)
            # Give the freed pages back to the file system, or the file keeps its largest size for ever: the vacuum
            # moves them to the log (a script steps it to the end; `execute` frees one page), the checkpoint cuts
            # the file and empties the log.
            connection.executescript("PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);")

        if keys:
            self._using(True, f"delete {len(keys)} stream(s)", remove)

    async def wait_for(self, stream: str, after: int, timeout: float, limit: int = 1000) -> list[StreamEvent]:
        """The stream's events after `after` as soon as there are any, or an empty list after `timeout` seconds.

        An append in this process wakes the reader at once, whichever thread or loop appended; appends from other
        processes are seen within `OTHER_PROCESS_POLL_SECONDS`.
        """
        check_read(after, limit)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        waiter = _Waiter(loop)
        # Registered before the first read: an append committed between that read and the wait still wakes us.
        self._signals.add(stream, waiter)
        try:
            while True:
                waiter.woken.clear()
                events = await self.read(stream, after, limit)
                remaining = deadline - loop.time()
                if events or remaining <= 0:
                    return events
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(remaining, OTHER_PROCESS_POLL_SECONDS)):
                        await waiter.woken.wait()
        finally:
            self._signals.discard(stream, waiter)

    def close(self) -> None:
        """Close the file; later calls fail with `StreamStoreUnavailableError`."""
        for lock, name in ((self._write_lock, "_writer"), (self._read_lock, "_reader")):
            with lock:
                connection = getattr(self, name)
                setattr(self, name, None)
            if connection is not None:
                connection.close()


def _reclaim_deleted_pages(connection: sqlite3.Connection) -> None:
    """Make deletes shrink the file (incremental auto-vacuum). A file made without it is rebuilt once, on open."""
    if connection.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL_VACUUM:
        return
    connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
    # Only a VACUUM applies the setting to a file that already has tables; a new file takes it as it is made.
    if connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        connection.execute("VACUUM")


def _close_connections(*connections: sqlite3.Connection) -> None:
    for connection in connections:
        connection.close()


def _last_id(connection: sqlite3.Connection, stream: str) -> int:
    row = connection.execute("SELECT max(id) FROM turn_stream_events WHERE stream = ?", (stream,)).fetchone()
    return int(row[0] or 0)


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
