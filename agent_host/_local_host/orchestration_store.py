"""Durable storage of orchestrations: instances, their history, their inbox and the activity queue.

The tables live in the entity store's SQLite file (``schema.ORCHESTRATION_SCHEMA``) and every write goes through its
connection and lock, so an episode, an activity's completion and an entity batch each commit in one transaction with
the messages they send. Knows the rows; knows nothing about the SDK's protocol or about scheduling.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .outbox import ActivityRequest, InboxKind, InstanceStart, Message, OrchestrationEvent, delete_instance
from .outbox import write_messages as _write_messages
from .store import EntityStore

TERMINAL_STATUSES = frozenset({"Completed", "Failed", "Terminated"})
"""Runtime statuses after which an instance runs no more episodes."""

_INSTANCE_COLUMNS = (
    "instance_id, name, version, execution_id, status, input, output, custom_status, parent_instance_id,"
    " parent_execution_id, parent_task_id, created_ms, updated_ms, progress"
)


class StaleEpisodeError(Exception):
    """The instance was replaced (a new start with its id) or purged while an episode ran; its outcome is dropped."""


@dataclass(frozen=True)
class InstanceRow:
    """One orchestration instance as stored.

    Attributes:
        instance_id: The id.
        name: The orchestrator function.
        version: The version given at start.
        execution_id: The current execution (a new one per start and per ``continue_as_new``).
        status: ``Pending``, ``Running``, ``Completed``, ``Failed`` or ``Terminated``.
        input: The current execution's input as JSON text, or None.
        output: The output (or failure message, or terminate reason) as JSON text, or None.
        custom_status: The last custom status an episode set, as JSON text, or None.
        parent_instance_id: For a sub-orchestration, its parent.
        parent_execution_id: The parent's execution.
        parent_task_id: The parent's task id for this sub-orchestration.
        created_ms: When it was started.
        updated_ms: When it last changed.
        progress: The engine's record of what the current execution scheduled (JSON text).
    """

    instance_id: str
    name: str
    version: str | None
    execution_id: str
    status: str
    input: str | None
    output: str | None
    custom_status: str | None
    parent_instance_id: str | None
    parent_execution_id: str | None
    parent_task_id: int | None
    created_ms: int
    updated_ms: int
    progress: str

    @property
    def is_terminal(self) -> bool:
        """Whether the instance has finished (completed, failed or terminated)."""
        return self.status in TERMINAL_STATUSES


@dataclass(frozen=True)
class InboxRow:
    """One event waiting in an orchestration's inbox.

    Attributes:
        seq: Its position in the inbox (global order of arrival).
        execution_id: The execution it is for; None when any execution may take it.
        kind: What it is.
        event: The history event it delivers.
    """

    seq: int
    execution_id: str | None
    kind: InboxKind
    event: dict[str, Any]


@dataclass(frozen=True)
class EpisodeInput:
    """What an episode starts from.

    Attributes:
        instance: The instance.
        played: The history so far, each event as stored JSON text (``IsPlayed`` true).
        inbox: The inbox rows visible now, in arrival order.
    """

    instance: InstanceRow
    played: list[str]
    inbox: list[InboxRow]


@dataclass
class EpisodeCommit:
    """Everything one episode changes, stored in one transaction.

    Attributes:
        instance_id: The instance.
        execution_id: The execution the episode ran for (the commit is refused if the instance moved on).
        consumed: Inbox rows the episode took or discarded.
        history: Events to append (stored with ``IsPlayed`` true).
        reset_history: Delete the earlier history first (``continue_as_new``).
        status: The new runtime status.
        new_execution_id: The execution after the episode (differs from ``execution_id`` after ``continue_as_new``).
        input: The (new) execution's input.
        output: The output JSON text, if the instance finished.
        custom_status: The new custom status JSON text; None keeps the stored one.
        progress: The engine's new record (JSON text).
        updated_ms: The episode's time.
        messages: What the episode sends.
    """

    instance_id: str
    execution_id: str
    consumed: list[int]
    history: list[dict[str, Any]]
    reset_history: bool
    status: str
    new_execution_id: str
    input: str | None
    output: str | None
    custom_status: str | None
    progress: str
    updated_ms: int
    messages: list[Message]


@dataclass(frozen=True)
class QueuedActivity:
    """An activity waiting to run (or running, or run but not yet recorded).

    Attributes:
        seq: Its row.
        request: What to run and for whom.
    """

    seq: int
    request: ActivityRequest


@dataclass(frozen=True)
class InstanceQuery:
    """Filters of ``GET instances`` (``get_status_all`` / ``get_status_by``).

    Attributes:
        created_from_ms: Only instances created at or after this time.
        created_to_ms: Only instances created at or before this time.
        statuses: Only these runtime statuses (all when empty).
        id_prefix: Only ids starting with this.
    """

    created_from_ms: int | None = None
    created_to_ms: int | None = None
    statuses: frozenset[str] = frozenset()
    id_prefix: str | None = None


class OrchestrationStore:
    """Reads and writes orchestration rows through the entity store's connection (one file, one lock).

    Every method raises :class:`~agent_host._local_host.store.StorageError` when the file fails.
    """

    def __init__(self, store: EntityStore) -> None:
        """Use the entity store's database.

        Args:
            store: The open entity store; its file already holds the orchestration tables.
        """
        self.entities = store

    # -- the engine ---------------------------------------------------------------------------------------------

    def load_episode(self, instance_id: str, now_ms: int) -> EpisodeInput | None:
        """Read what an episode of an instance starts from.

        Args:
            instance_id: The instance.
            now_ms: Inbox rows visible at or before this time are included.

        Returns:
            The instance, its history and its visible inbox; None if the instance does not exist.
        """
        with self.entities.reading("read an orchestration") as conn:
            row = conn.execute(
                f"SELECT {_INSTANCE_COLUMNS} FROM orchestrations WHERE instance_id = ?", (instance_id,)
            ).fetchone()
            if row is None:
                return None
            played = [
                str(r[0])
                for r in conn.execute(
                    "SELECT event FROM orchestration_history WHERE instance_id = ? ORDER BY position", (instance_id,)
                )
            ]
            inbox = [
                InboxRow(seq=int(r[0]), execution_id=r[1], kind=InboxKind(r[2]), event=json.loads(r[3]))
                for r in conn.execute(
                    "SELECT seq, execution_id, kind, event FROM orchestration_inbox"
                    " WHERE instance_id = ? AND visible_ms <= ? ORDER BY seq",
                    (instance_id, now_ms),
                )
            ]
        return EpisodeInput(InstanceRow(*row), played, inbox)

    def commit_episode(self, commit: EpisodeCommit) -> None:
        """Store an episode: history, consumed inbox rows, the instance row and the messages, in one transaction.

        Args:
            commit: What the episode changed.

        Raises:
            StaleEpisodeError: The instance was replaced or purged meanwhile; nothing was stored.
        """
        with self.entities.transaction("commit an orchestration episode") as conn:
            cursor = conn.execute(
                "UPDATE orchestrations SET status = ?, execution_id = ?, input = ?, output = ?,"
                " custom_status = COALESCE(?, custom_status), progress = ?, updated_ms = ?"
                " WHERE instance_id = ? AND execution_id = ?",
                (
                    commit.status,
                    commit.new_execution_id,
                    commit.input,
                    commit.output,
                    commit.custom_status,
                    commit.progress,
                    commit.updated_ms,
                    commit.instance_id,
                    commit.execution_id,
                ),
            )
            if cursor.rowcount != 1:
                raise StaleEpisodeError(commit.instance_id)
            if commit.reset_history:
                conn.execute("DELETE FROM orchestration_history WHERE instance_id = ?", (commit.instance_id,))
            (start,) = conn.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM orchestration_history WHERE instance_id = ?",
                (commit.instance_id,),
            ).fetchone()
            conn.executemany(
                "INSERT INTO orchestration_history (instance_id, position, event) VALUES (?, ?, ?)",
                [
                    (commit.instance_id, start + offset, json.dumps({**event, "IsPlayed": True}))
                    for offset, event in enumerate(commit.history)
                ],
            )
            conn.executemany("DELETE FROM orchestration_inbox WHERE seq = ?", [(seq,) for seq in commit.consumed])
            _write_messages(conn, commit.messages)

    def discard_inbox(self, instance_id: str) -> int:
        """Delete the inbox rows of an instance that no longer exists (a late response after a purge).

        Args:
            instance_id: The instance.

        Returns:
            How many rows were deleted.
        """
        with self.entities.transaction("discard an orphaned inbox") as conn:
            return conn.execute("DELETE FROM orchestration_inbox WHERE instance_id = ?", (instance_id,)).rowcount

    def instances_with_inbox(self, now_ms: int) -> list[str]:
        """List the instances that have inbox rows visible now (to schedule them after a restart).

        Args:
            now_ms: The current time.

        Returns:
            Instance ids, oldest waiting row first.
        """
        with self.entities.reading("read orchestration inboxes") as conn:
            rows = conn.execute(
                "SELECT instance_id FROM orchestration_inbox WHERE visible_ms <= ? GROUP BY instance_id"
                " ORDER BY MIN(seq)",
                (now_ms,),
            ).fetchall()
        return [str(r[0]) for r in rows]

    def future_timers(self, now_ms: int) -> list[tuple[int, str]]:
        """List the timers not yet due.

        Args:
            now_ms: The current time.

        Returns:
            ``(due_ms, instance_id)`` pairs.
        """
        with self.entities.reading("read durable timers") as conn:
            rows = conn.execute(
                "SELECT visible_ms, instance_id FROM orchestration_inbox WHERE visible_ms > ?", (now_ms,)
            ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def queued_activities(self) -> list[QueuedActivity]:
        """List every activity not yet recorded as done, oldest first.

        Returns:
            The queued activities.
        """
        with self.entities.reading("read the activity queue") as conn:
            rows = conn.execute(
                "SELECT seq, instance_id, execution_id, task_id, name, input, created_ms FROM activity_queue"
                " ORDER BY seq"
            ).fetchall()
        return [QueuedActivity(int(r[0]), ActivityRequest(*r[1:])) for r in rows]

    def activity_queued(self, seq: int) -> bool:
        """Tell whether an activity is still waiting for its outcome to be recorded.

        Args:
            seq: The activity's row.

        Returns:
            True while its row is in the queue.
        """
        with self.entities.reading("read the activity queue") as conn:
            return conn.execute("SELECT 1 FROM activity_queue WHERE seq = ?", (seq,)).fetchone() is not None

    def complete_activity(self, seq: int, completion: OrchestrationEvent) -> bool:
        """Record an activity's outcome: remove it from the queue and put its completion in the inbox, together.

        Args:
            seq: The activity's row.
            completion: Its TaskCompleted or TaskFailed event for the orchestration.

        Returns:
            False when the row was gone (its execution ended meanwhile): the outcome is dropped.
        """
        with self.entities.transaction("record an activity's outcome") as conn:
            if conn.execute("DELETE FROM activity_queue WHERE seq = ?", (seq,)).rowcount != 1:
                return False
            _write_messages(conn, [completion])
            return True

    # -- the client API -----------------------------------------------------------------------------------------

    def start(self, start: InstanceStart, *, keep_statuses: frozenset[str] = frozenset()) -> InstanceRow | None:
        """Create an instance and queue its ExecutionStarted, replacing one with the same id unless its status is one
        of `keep_statuses`; the check and the write are one transaction, so two starts cannot both win.

        Args:
            start: The new instance.
            keep_statuses: Statuses of an existing instance that refuse the start.

        Returns:
            The existing instance when it refused the start (nothing was written), else None.
        """
        with self.entities.transaction("start an orchestration") as conn:
            if keep_statuses:
                row = conn.execute(
                    f"SELECT {_INSTANCE_COLUMNS} FROM orchestrations WHERE instance_id = ?", (start.instance_id,)
                ).fetchone()
                if row is not None and row[4] in keep_statuses:
                    return InstanceRow(*row)
            _write_messages(conn, [start])
            return None

    def send(self, messages: Sequence[Message]) -> None:
        """Store messages from a client (an external event, a terminate request).

        Args:
            messages: The messages.
        """
        with self.entities.transaction("send to an orchestration") as conn:
            _write_messages(conn, messages)

    def instance(self, instance_id: str) -> InstanceRow | None:
        """Read one instance.

        Args:
            instance_id: The instance.

        Returns:
            The instance, or None.
        """
        with self.entities.reading("read an orchestration") as conn:
            row = conn.execute(
                f"SELECT {_INSTANCE_COLUMNS} FROM orchestrations WHERE instance_id = ?", (instance_id,)
            ).fetchone()
        return None if row is None else InstanceRow(*row)

    def history(self, instance_id: str) -> list[dict[str, Any]]:
        """Read an instance's history (its current execution).

        Args:
            instance_id: The instance.

        Returns:
            The events in order.
        """
        with self.entities.reading("read an orchestration's history") as conn:
            rows = conn.execute(
                "SELECT event FROM orchestration_history WHERE instance_id = ? ORDER BY position", (instance_id,)
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def query(self, query: InstanceQuery, *, after_id: str | None, limit: int) -> list[InstanceRow]:
        """List instances matching filters, by instance id.

        Args:
            query: The filters.
            after_id: Continue after this id (a continuation token).
            limit: At most this many.

        Returns:
            The matching instances.
        """
        where, args = _where(query)
        if after_id is not None:
            where.append("instance_id > ?")
            args.append(after_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        with self.entities.reading("query orchestrations") as conn:
            rows = conn.execute(
                f"SELECT {_INSTANCE_COLUMNS} FROM orchestrations{clause} ORDER BY instance_id LIMIT ?", (*args, limit)
            ).fetchall()
        return [InstanceRow(*r) for r in rows]

    def purge(self, instance_ids: Iterable[str]) -> int:
        """Delete instances with their history, inbox and queued activities.

        Args:
            instance_ids: The instances.

        Returns:
            How many existed.
        """
        with self.entities.transaction("purge orchestrations") as conn:
            return sum(delete_instance(conn, instance_id) for instance_id in instance_ids)


def _where(query: InstanceQuery) -> tuple[list[str], list[Any]]:
    """SQL conditions for a query's filters.

    Args:
        query: The filters.

    Returns:
        The conditions and their arguments.
    """
    where: list[str] = []
    args: list[Any] = []
    if query.created_from_ms is not None:
        where.append("created_ms >= ?")
        args.append(query.created_from_ms)
    if query.created_to_ms is not None:
        where.append("created_ms <= ?")
        args.append(query.created_to_ms)
    if query.statuses:
        where.append(f"status IN ({', '.join('?' for _ in query.statuses)})")
        args.extend(sorted(query.statuses))
    if query.id_prefix:
        where.append("substr(instance_id, 1, ?) = ?")
        args.extend([len(query.id_prefix), query.id_prefix])
    return where, args
