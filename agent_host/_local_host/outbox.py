"""Durable messages: every side effect of a committed step, written in that step's own transaction.

An orchestration episode, an activity or an entity batch never acts on anything directly: it hands its effects (an
operation for an entity, an event for an orchestration, an activity to run, a timer, a new instance) to
:func:`write_messages` inside the transaction that commits the step. A crash before the commit loses the step and its
messages together; after it, both are stored and nothing is sent twice. Knows the tables the messages go to, and
nothing about what an episode or an entity is.
"""

from __future__ import annotations

import enum
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .orchestration_protocol import execution_started_event


class InboxKind(enum.Enum):
    """What an inbox row brings an orchestration."""

    START = "start"
    """ExecutionStarted of a new execution."""
    COMPLETION = "completion"
    """An activity, sub-orchestration or entity call finished."""
    TIMER = "timer"
    """A durable timer; visible once it is due."""
    EVENT = "event"
    """An external event (``raise_event``); kept for whichever execution waits for it."""
    TERMINATE = "terminate"
    """A terminate request."""


@dataclass(frozen=True)
class EntityRequest:
    """An operation for an entity's queue: a signal, or a call whose response an orchestration waits for.

    Attributes:
        name: Lower-cased entity name.
        key: Entity key.
        operation: Operation name.
        input: The operation input as the entity function receives it (JSON text of JSON text), or None.
        at_ms: When it was sent.
        request_id: For a call, the id the response event carries; None for a signal.
        parent_instance_id: The orchestration that sent it.
        parent_execution_id: That orchestration's execution, so a response to an earlier execution is dropped.
    """

    name: str
    key: str
    operation: str
    input: str | None
    at_ms: int
    request_id: str | None = None
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None


@dataclass(frozen=True)
class OrchestrationEvent:
    """An event for an orchestration's inbox.

    Attributes:
        instance_id: The orchestration.
        execution_id: The execution it belongs to; None for events any execution may take (external events).
        kind: What the event is.
        event: The history event.
        at_ms: When it was sent.
        visible_ms: When an episode may take it (later than ``at_ms`` for a timer).
        task_id: The task a timer belongs to, so a cancelled timer's row can be deleted.
    """

    instance_id: str
    execution_id: str | None
    kind: InboxKind
    event: dict[str, Any]
    at_ms: int
    visible_ms: int
    task_id: int | None = None


@dataclass(frozen=True)
class ActivityRequest:
    """An activity to run.

    Attributes:
        instance_id: The orchestration that scheduled it.
        execution_id: Its execution.
        task_id: The task id its completion event names.
        name: The activity function.
        input: Its input as the SDK encoded it (JSON text).
        at_ms: When it was scheduled.
    """

    instance_id: str
    execution_id: str
    task_id: int
    name: str
    input: str | None
    at_ms: int


@dataclass(frozen=True)
class TimerCancellation:
    """A cancelled timer: its inbox row is deleted, so it never fires.

    Attributes:
        instance_id: The orchestration.
        execution_id: Its execution.
        task_id: The timer's task id.
    """

    instance_id: str
    execution_id: str
    task_id: int


@dataclass(frozen=True)
class ExecutionCleanup:
    """An execution ended (completed, failed, terminated or continued as new): its queued work is dropped.

    Attributes:
        instance_id: The orchestration.
        execution_id: The execution whose pending activities and timers are deleted.
    """

    instance_id: str
    execution_id: str


@dataclass(frozen=True)
class InstanceStart:
    """A new orchestration instance (or a new start of an existing id, which replaces it) and its ExecutionStarted.

    Attributes:
        instance_id: The instance id.
        name: The orchestrator function.
        version: The version given at start, if any.
        execution_id: The new execution.
        input: The input as stored: JSON text, or None.
        at_ms: Creation time.
        parent_instance_id: For a sub-orchestration, its parent.
        parent_execution_id: The parent's execution.
        parent_task_id: The parent's task id for this sub-orchestration.
        parent_trace_context: The starter's trace context (``TraceParent``, ``TraceState``), when it sent one.
    """

    instance_id: str
    name: str
    version: str | None
    execution_id: str
    input: str | None
    at_ms: int
    parent_instance_id: str | None = None
    parent_execution_id: str | None = None
    parent_task_id: int | None = None
    parent_trace_context: dict[str, str] | None = None

    def started_event(self) -> dict[str, Any]:
        """The ExecutionStarted event of the new execution."""
        return execution_started_event(
            self.at_ms,
            name=self.name,
            version=self.version,
            input_text=self.input,
            instance_id=self.instance_id,
            execution_id=self.execution_id,
            parent_instance_id=self.parent_instance_id,
            parent_task_id=self.parent_task_id,
            parent_trace_context=self.parent_trace_context,
        )


Message = EntityRequest | OrchestrationEvent | ActivityRequest | TimerCancellation | ExecutionCleanup | InstanceStart


def write_messages(conn: sqlite3.Connection, messages: Sequence[Message]) -> None:
    """Store messages inside the caller's open transaction.

    Args:
        conn: The connection, with a write transaction open.
        messages: The messages, written in order.
    """
    for message in messages:
        if isinstance(message, EntityRequest):
            conn.execute(
                "INSERT INTO signals (name, key, operation, input, enqueued_at, request_id, parent_instance_id,"
                " parent_execution_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message.name,
                    message.key,
                    message.operation,
                    message.input,
                    message.at_ms / 1000,
                    message.request_id,
                    message.parent_instance_id,
                    message.parent_execution_id,
                ),
            )
        elif isinstance(message, OrchestrationEvent):
            _insert_inbox(
                conn,
                message.instance_id,
                message.execution_id,
                message.kind,
                message.task_id,
                message.event,
                message.visible_ms,
                message.at_ms,
            )
        elif isinstance(message, ActivityRequest):
            conn.execute(
                "INSERT INTO activity_queue (instance_id, execution_id, task_id, name, input, created_ms)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    message.instance_id,
                    message.execution_id,
                    message.task_id,
                    message.name,
                    message.input,
                    message.at_ms,
                ),
            )
        elif isinstance(message, TimerCancellation):
            conn.execute(
                "DELETE FROM orchestration_inbox WHERE instance_id = ? AND execution_id = ? AND kind = ?"
                " AND task_id = ?",
                (message.instance_id, message.execution_id, InboxKind.TIMER.value, message.task_id),
            )
        elif isinstance(message, ExecutionCleanup):
            conn.execute(
                "DELETE FROM activity_queue WHERE instance_id = ? AND execution_id = ?",
                (message.instance_id, message.execution_id),
            )
            conn.execute(
                "DELETE FROM orchestration_inbox WHERE instance_id = ? AND execution_id = ? AND kind = ?",
                (message.instance_id, message.execution_id, InboxKind.TIMER.value),
            )
        else:
            _start_instance(conn, message)


def _insert_inbox(
    conn: sqlite3.Connection,
    instance_id: str,
    execution_id: str | None,
    kind: InboxKind,
    task_id: int | None,
    event: dict[str, Any],
    visible_ms: int,
    at_ms: int,
) -> None:
    """Append one row to an orchestration's inbox."""
    conn.execute(
        "INSERT INTO orchestration_inbox (instance_id, execution_id, kind, task_id, event, visible_ms, created_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (instance_id, execution_id, kind.value, task_id, json.dumps(event), visible_ms, at_ms),
    )


def _start_instance(conn: sqlite3.Connection, start: InstanceStart) -> None:
    """Create an instance, replacing any earlier one with its id (history, inbox and queued activities included).

    The real host's default (``overridableExistingInstanceStates`` AnyState) replaces an existing instance too.
    """
    delete_instance(conn, start.instance_id)
    conn.execute(
        "INSERT INTO orchestrations (instance_id, name, version, execution_id, status, input, output, custom_status,"
        " parent_instance_id, parent_execution_id, parent_task_id, created_ms, updated_ms, progress)"
        " VALUES (?, ?, ?, ?, 'Pending', ?, NULL, NULL, ?, ?, ?, ?, ?, '{}')",
        (
            start.instance_id,
            start.name,
            start.version,
            start.execution_id,
            start.input,
            start.parent_instance_id,
            start.parent_execution_id,
            start.parent_task_id,
            start.at_ms,
            start.at_ms,
        ),
    )
    _insert_inbox(
        conn,
        start.instance_id,
        start.execution_id,
        InboxKind.START,
        None,
        start.started_event(),
        start.at_ms,
        start.at_ms,
    )


def delete_instance(conn: sqlite3.Connection, instance_id: str) -> int:
    """Delete an instance with its history, inbox and queued activities, inside the caller's transaction.

    Args:
        conn: The connection, with a write transaction open.
        instance_id: The instance.

    Returns:
        1 if the instance existed, else 0.
    """
    cursor = conn.execute("DELETE FROM orchestrations WHERE instance_id = ?", (instance_id,))
    conn.execute("DELETE FROM orchestration_history WHERE instance_id = ?", (instance_id,))
    conn.execute("DELETE FROM orchestration_inbox WHERE instance_id = ?", (instance_id,))
    conn.execute("DELETE FROM activity_queue WHERE instance_id = ?", (instance_id,))
    return cursor.rowcount
