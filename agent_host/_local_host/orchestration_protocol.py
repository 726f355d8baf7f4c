"""The JSON protocol between the Durable Functions Python SDK and its host, for orchestrations.

History events the host writes, the context JSON it hands an orchestrator function, and the actions the orchestrator
returns, flattened into the leaves the host schedules. Knows nothing about storage, threads or HTTP.

Facts this module rests on (azure-functions-durable 1.7, checked against the SDK's own replay):

* every history event needs ``EventType``, ``EventId``, ``IsPlayed`` and ``Timestamp``; ExecutionStarted also needs
  ``Version``; the SDK ignores the scheduling events (TaskScheduled, TimerCreated, ...) but the host numbers tasks by
  them;
* the last OrchestratorStarted marks where replay ends, and its ``Timestamp`` is ``current_utc_datetime``;
* with ``upperSchemaVersion`` 1 and ``upperSchemaVersionNew`` 2 the SDK answers one list of actions in which
  ``task_all``/``task_any`` are compound actions and a ``*_with_retry`` call is a WhenAll around its one action;
* a user exception comes back as an exception whose message ends in ``$OutOfProcData$:`` and the state JSON.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from azure.durable_functions.models.actions.ActionType import ActionType
from azure.durable_functions.models.history.HistoryEventType import HistoryEventType

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""How the SDK writes ``fireAt`` and how the host writes every history timestamp: UTC, microseconds, a ``Z``."""

OUT_OF_PROC_LABEL = "\n\n$OutOfProcData$:"
"""What separates a user exception's message from the orchestrator state in the SDK's error (as the extension reads
it)."""

UPPER_SCHEMA_VERSION = 1
UPPER_SCHEMA_VERSION_NEW = 2
"""The replay schema the context offers, as the Durable Task Scheduler and MSSQL backends do (no long-timer
durations): the SDK then answers ``schemaVersion`` 2 with one flat list of actions."""

SCHEDULING_EVENT_TYPES = frozenset(
    {
        HistoryEventType.TASK_SCHEDULED,
        HistoryEventType.TIMER_CREATED,
        HistoryEventType.SUB_ORCHESTRATION_INSTANCE_CREATED,
        HistoryEventType.EVENT_SENT,
    }
)
"""Events whose ``EventId`` is a task id the orchestrator numbered."""

COMPLETION_ID_KEYS: dict[int, str] = {
    HistoryEventType.TASK_COMPLETED: "TaskScheduledId",
    HistoryEventType.TASK_FAILED: "TaskScheduledId",
    HistoryEventType.TIMER_FIRED: "TimerId",
    HistoryEventType.SUB_ORCHESTRATION_INSTANCE_COMPLETED: "TaskScheduledId",
    HistoryEventType.SUB_ORCHESTRATION_INSTANCE_FAILED: "TaskScheduledId",
    HistoryEventType.EVENT_RAISED: "Name",
}
"""For each event that completes a task, the field that names the task (as the SDK's executor reads it)."""

FAILURE_EVENT_TYPES = frozenset({HistoryEventType.TASK_FAILED, HistoryEventType.SUB_ORCHESTRATION_INSTANCE_FAILED})


def format_timestamp(ms: int) -> str:
    """Write a Unix time in milliseconds as the SDK's UTC timestamp text.

    Args:
        ms: Milliseconds since the epoch.

    Returns:
        For example ``2023-11-14T22:13:20.000000Z``.
    """
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(TIMESTAMP_FORMAT)


def parse_timestamp(text: str) -> int:
    """Read a UTC timestamp the SDK wrote (``fireAt``) back into milliseconds.

    The SDK appends ``Z`` even to a naive datetime, so the text is always taken as UTC, as the real host does.

    Args:
        text: For example ``2023-11-14T22:13:20.000000Z``; fractions and the ``Z`` are optional.

    Returns:
        Milliseconds since the epoch.

    Raises:
        ValueError: If the text is not an ISO timestamp.
    """
    parsed = datetime.fromisoformat(text.removesuffix("Z"))
    return round(parsed.replace(tzinfo=UTC).timestamp() * 1000)


def history_event(event_type: HistoryEventType, at_ms: int, *, event_id: int = -1, **fields: Any) -> dict[str, Any]:
    """One history event in the shape the SDK requires.

    Args:
        event_type: The event's type.
        at_ms: When it happened (milliseconds since the epoch).
        event_id: The task id for scheduling events; -1 for every other event, as in the real host.
        **fields: The event's own fields (``Name``, ``Input``, ``TaskScheduledId``, ...).

    Returns:
        The event as a JSON-ready dict, not yet played.
    """
    return {
        "EventType": int(event_type),
        "EventId": event_id,
        "IsPlayed": False,
        "Timestamp": format_timestamp(at_ms),
        **fields,
    }


def execution_started_event(
    at_ms: int,
    *,
    name: str,
    version: str | None,
    input_text: str | None,
    instance_id: str,
    execution_id: str,
    parent_instance_id: str | None = None,
    parent_task_id: int | None = None,
    parent_trace_context: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ExecutionStarted event that begins an execution (the SDK fails without its ``Version`` field).

    Args:
        at_ms: When the execution was started.
        name: The orchestrator function.
        version: The version given at start, if any.
        input_text: The input as stored (JSON text), or None.
        instance_id: The instance.
        execution_id: The new execution.
        parent_instance_id: The parent of a sub-orchestration.
        parent_task_id: The parent's task id for it.
        parent_trace_context: The starter's W3C trace context, as the Durable Task Framework records it
            (``TraceParent``, ``TraceState``), so the orchestration continues its starter's trace.

    Returns:
        The event.
    """
    parent: dict[str, Any] = (
        {"ParentInstance": {"InstanceId": parent_instance_id, "TaskScheduleId": parent_task_id}}
        if parent_instance_id is not None
        else {}
    )
    fields: dict[str, Any] = {
        "Name": name,
        "Version": version or "",
        "Input": input_text,
        "OrchestrationInstance": {"InstanceId": instance_id, "ExecutionId": execution_id},
        **parent,
    }
    if parent_trace_context:
        fields["ParentTraceContext"] = parent_trace_context
    return history_event(HistoryEventType.EXECUTION_STARTED, at_ms, **fields)


def entity_response_event(request_id: str, result_text: str, *, failed: bool, at_ms: int) -> dict[str, Any]:
    """The event that answers a ``call_entity``: EventRaised named by the request id, the result as JSON text.

    Args:
        request_id: The id the call's EventSent carried.
        result_text: The operation's result as the entity function encoded it (JSON text); for a failure, the
            error message as JSON text.
        failed: The operation failed: ``exceptionType`` is added, which makes the SDK raise in the orchestrator.
        at_ms: When the operation finished.

    Returns:
        The event.
    """
    response: dict[str, Any] = {"result": result_text}
    if failed:
        response["exceptionType"] = "Error"
    return history_event(HistoryEventType.EVENT_RAISED, at_ms, Name=request_id, Input=json.dumps(response))


def context_json(
    *,
    played: Sequence[str],
    new_events: Sequence[dict[str, Any]],
    instance_id: str,
    input_text: str | None,
    parent_instance_id: str | None,
) -> str:
    """The JSON an orchestrator function receives: the history so far, the new events, and the instance.

    Args:
        played: Earlier events, each stored as JSON text with ``IsPlayed`` true (spliced in without re-parsing).
        new_events: This episode's OrchestratorStarted and the events it delivers.
        instance_id: The instance.
        input_text: The instance input as stored: JSON text, embedded as the JSON value it is; None for no input.
        parent_instance_id: The parent orchestration of a sub-orchestration.

    Returns:
        The context JSON text.
    """
    history = ",".join([*played, *(json.dumps(event) for event in new_events)])
    head = json.dumps(
        {
            "instanceId": instance_id,
            "isReplaying": bool(played),
            "parentInstanceId": parent_instance_id,
            "upperSchemaVersion": UPPER_SCHEMA_VERSION,
            "upperSchemaVersionNew": UPPER_SCHEMA_VERSION_NEW,
        }
    )
    return f'{head[:-1]}, "input": {input_text if input_text is not None else "null"}, "history": [{history}]}}'


class LeafKind(enum.Enum):
    """What one leaf action asks the host to do."""

    ACTIVITY = "activity"
    SUB_ORCHESTRATION = "sub_orchestration"
    TIMER = "timer"
    EXTERNAL_EVENT = "external_event"
    CALL_ENTITY = "call_entity"
    SIGNAL_ENTITY = "signal_entity"
    CONTINUE_AS_NEW = "continue_as_new"
    CALL_HTTP = "call_http"
    UNSUPPORTED = "unsupported"


_LEAF_KINDS: dict[int, LeafKind] = {
    ActionType.CALL_ACTIVITY: LeafKind.ACTIVITY,
    ActionType.CALL_ACTIVITY_WITH_RETRY: LeafKind.ACTIVITY,
    ActionType.CALL_SUB_ORCHESTRATOR: LeafKind.SUB_ORCHESTRATION,
    ActionType.CALL_SUB_ORCHESTRATOR_WITH_RETRY: LeafKind.SUB_ORCHESTRATION,
    ActionType.CREATE_TIMER: LeafKind.TIMER,
    ActionType.WAIT_FOR_EXTERNAL_EVENT: LeafKind.EXTERNAL_EVENT,
    ActionType.CALL_ENTITY: LeafKind.CALL_ENTITY,
    ActionType.SIGNAL_ENTITY: LeafKind.SIGNAL_ENTITY,
    ActionType.CONTINUE_AS_NEW: LeafKind.CONTINUE_AS_NEW,
    ActionType.CALL_HTTP: LeafKind.CALL_HTTP,
}
_COMPOUND_TYPES = frozenset({ActionType.WHEN_ANY, ActionType.WHEN_ALL})


@dataclass(frozen=True)
class RetryPolicy:
    """The retry options of a ``*_with_retry`` call, as the SDK sends them (it has no backoff or timeout).

    Attributes:
        first_interval_ms: Delay before every retry (``firstRetryIntervalInMilliseconds``; no backoff coefficient).
        max_attempts: Attempts in all (``maxNumberOfAttempts``).
    """

    first_interval_ms: int
    max_attempts: int


@dataclass(frozen=True)
class Leaf:
    """One action that is not a WhenAll/WhenAny, in the order the orchestrator created it.

    Attributes:
        kind: What it asks for.
        action: The action JSON as the SDK sent it.
        retry: Its retry policy, for ``*_with_retry`` calls.
    """

    kind: LeafKind
    action: dict[str, Any]
    retry: RetryPolicy | None = None

    @property
    def consumes_id(self) -> bool:
        """Whether the SDK numbered it (every leaf but an external-event wait takes the next task id)."""
        return self.kind is not LeafKind.EXTERNAL_EVENT

    @property
    def identity(self) -> str:
        """What a replay must schedule again at this position: the function, timer, event or entity operation."""
        action = self.action
        if self.kind in (LeafKind.ACTIVITY, LeafKind.SUB_ORCHESTRATION):
            return str(action.get("functionName"))
        if self.kind is LeafKind.EXTERNAL_EVENT:
            return str(action.get("externalEventName"))
        if self.kind in (LeafKind.CALL_ENTITY, LeafKind.SIGNAL_ENTITY):
            return f"{action.get('instanceId')}:{action.get('operation')}"
        if self.kind is LeafKind.UNSUPPORTED:
            return f"actionType {action.get('actionType')}"
        return self.kind.value

    @property
    def describe(self) -> str:
        """The leaf in words for error messages, e.g. ``activity 'charge'``."""
        return f"{self.kind.value.replace('_', ' ')} {self.identity!r}"

    @property
    def is_cancelled_timer(self) -> bool:
        """Whether it is a timer the orchestrator cancelled."""
        return self.kind is LeafKind.TIMER and bool(self.action.get("isCanceled"))


def flatten_actions(actions: Any) -> list[Leaf]:
    """Flatten the SDK's action payload into its leaves, children of compound actions in order.

    Args:
        actions: The ``actions`` of the orchestrator state: a list of lists (one list with schema V2 and later).

    Returns:
        The leaves in creation order, which is task id order.
    """
    return list(_walk(action for group in actions or [] for action in group))


def _walk(actions: Iterator[dict[str, Any]] | Sequence[dict[str, Any]]) -> Iterator[Leaf]:
    """Yield the leaves under some actions, depth first."""
    for action in actions:
        action_type = action.get("actionType")
        if action_type in _COMPOUND_TYPES:
            yield from _walk(action.get("compoundActions") or [])
            continue
        kind = _LEAF_KINDS.get(action_type, LeafKind.UNSUPPORTED) if isinstance(action_type, int) else None
        retry = _retry_policy(action.get("retryOptions"))
        yield Leaf(kind or LeafKind.UNSUPPORTED, action, retry)


def _retry_policy(options: Any) -> RetryPolicy | None:
    """Read ``retryOptions``, if the action has them."""
    if not isinstance(options, dict):
        return None
    return RetryPolicy(
        first_interval_ms=int(options.get("firstRetryIntervalInMilliseconds") or 0),
        max_attempts=int(options.get("maxNumberOfAttempts") or 0),
    )


@dataclass(frozen=True)
class OrchestratorResult:
    """What one run of an orchestrator function returned.

    Attributes:
        is_done: The orchestrator returned (or continued as new).
        leaves: Every action it has created since the instance started.
        output_text: Its return value as JSON text, when done.
        error: The message of the exception the user code raised, or of the SDK's own failure.
        custom_status_text: The custom status as JSON text, when the run set a truthy one (the SDK sends nothing
            otherwise, and the host then keeps the previous one).
        sdk_failure: True when the SDK itself failed (no orchestrator state came back), so ``leaves`` is empty and
            must not be compared with the history.
    """

    is_done: bool
    leaves: list[Leaf]
    output_text: str | None
    error: str | None
    custom_status_text: str | None
    sdk_failure: bool = False


def read_orchestrator_state(state_text: str) -> OrchestratorResult:
    """Parse the state JSON the orchestrator handle returned (or embedded in its exception).

    Args:
        state_text: The orchestrator state JSON.

    Returns:
        The parsed result.

    Raises:
        ValueError: If the text is not an orchestrator state.
    """
    state = json.loads(state_text)
    if not isinstance(state, dict) or "actions" not in state:
        raise ValueError("the orchestrator did not return an orchestrator state")
    custom = state.get("customStatus")
    return OrchestratorResult(
        is_done=bool(state.get("isDone")),
        leaves=flatten_actions(state.get("actions")),
        output_text=json.dumps(state["output"]) if "output" in state else None,
        error=state.get("error") or None,
        custom_status_text=json.dumps(custom) if custom else None,
    )


def result_of_exception(exc: BaseException) -> OrchestratorResult:
    """Turn what the orchestrator handle raised into a result.

    A user exception carries the state after ``$OutOfProcData$:`` (the actions scheduled so far and ``error``);
    anything else is a failure of the SDK itself, reported with its type.

    Args:
        exc: The exception the handle raised.

    Returns:
        The failed result.
    """
    message = str(exc)
    user_message, label, state_text = message.partition(OUT_OF_PROC_LABEL)
    if label:
        try:
            result = read_orchestrator_state(state_text)
        except ValueError:
            pass
        else:
            return OrchestratorResult(
                False, result.leaves, None, result.error or user_message, result.custom_status_text
            )
    return OrchestratorResult(
        is_done=False,
        leaves=[],
        output_text=None,
        error=(
            "the orchestrator function raised outside the SDK's replay, so no orchestrator state came back: "
            f"{type(exc).__name__}: {message}"
        ),
        custom_status_text=None,
        sdk_failure=True,
    )
