"""Reading recorded orchestration histories: normalizing them for golden files, checking that they are well formed
(task ids by position, every completion paired with its scheduling event once), and replaying them in the SDK alone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from azure.durable_functions.constants import DATETIME_STRING_FORMAT
from azure.durable_functions.models.DurableOrchestrationContext import DurableOrchestrationContext
from azure.durable_functions.models.history.HistoryEventType import HistoryEventType as T
from azure.durable_functions.orchestrator import Orchestrator

_HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
_TRACEBACK = "Traceback (most recent call last)"

SCHEDULING = {T.TASK_SCHEDULED, T.TIMER_CREATED, T.SUB_ORCHESTRATION_INSTANCE_CREATED, T.EVENT_SENT}
# Completion event -> (the field naming its task, the scheduling event types it may answer).
COMPLETES = {
    T.TASK_COMPLETED: ("TaskScheduledId", {T.TASK_SCHEDULED}),
    T.TASK_FAILED: ("TaskScheduledId", {T.TASK_SCHEDULED}),
    T.TIMER_FIRED: ("TimerId", {T.TIMER_CREATED}),
    T.SUB_ORCHESTRATION_INSTANCE_COMPLETED: ("TaskScheduledId", {T.SUB_ORCHESTRATION_INSTANCE_CREATED}),
    T.SUB_ORCHESTRATION_INSTANCE_FAILED: ("TaskScheduledId", {T.SUB_ORCHESTRATION_INSTANCE_CREATED}),
}


def history_timestamp(ms: int) -> str:
    """A Unix time in milliseconds as the SDK writes and reads history times: UTC in its `DATETIME_STRING_FORMAT`."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(DATETIME_STRING_FORMAT)


def normalize(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A history with what differs between runs replaced: generated ids by `<id-N>` in order of first appearance
    (also inside JSON text), tracebacks by `<traceback>` (see `without_tracebacks`)."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        return names.setdefault(match.group(0), f"<id-{len(names) + 1}>")

    return without_tracebacks(json.loads(_HEX_ID.sub(rename, json.dumps(history))))


def without_tracebacks(value: Any) -> Any:
    """A JSON value with every Python traceback in its strings (they name files and lines) cut to `<traceback>`."""
    if isinstance(value, dict):
        return {key: without_tracebacks(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_tracebacks(item) for item in value]
    if isinstance(value, str) and _TRACEBACK in value:
        return value[: value.index(_TRACEBACK)] + "<traceback>"
    return value


def entity_request(event: dict[str, Any]) -> dict[str, Any]:
    """The request message an EventSent carries."""
    return json.loads(event["Input"])


def check_well_formed(history: list[dict[str, Any]], *, finished: bool = True) -> dict[int, list[dict[str, Any]]]:
    """Assert the history has the real host's shape and return each task id's completions.

    * It starts with OrchestratorStarted and ExecutionStarted (with a Version); every OrchestratorStarted is followed
      by exactly one OrchestratorCompleted before the next one.
    * Task ids (EventId of TaskScheduled, TimerCreated, SubOrchestrationInstanceCreated, EventSent) are 0, 1, 2, ...
      in order of appearance: ids by position.
    * Every completion names an earlier scheduling event of the matching type, and each task completes at most once
      (exactly once when `finished`, except timers, which a cancelled timer never completes).
    * Every entity response (EventRaised named by a request id) answers an earlier call's EventSent, exactly once;
      signals get none.
    """
    types = [T(event["EventType"]) for event in history]
    assert types[:2] == [T.ORCHESTRATOR_STARTED, T.EXECUTION_STARTED], types[:2]
    assert "Version" in history[1]
    open_episode = False
    for event_type in types:
        if event_type is T.ORCHESTRATOR_STARTED:
            assert not open_episode, "an episode began before the previous one completed"
            open_episode = True
        elif event_type is T.ORCHESTRATOR_COMPLETED:
            assert open_episode
            open_episode = False
    assert not open_episode, "the last episode has no OrchestratorCompleted"

    scheduled: dict[int, dict[str, Any]] = {}
    calls: dict[str, dict[str, Any]] = {}
    completions: dict[int, list[dict[str, Any]]] = {}
    responses: Counter[str] = Counter()
    for event, event_type in zip(history, types, strict=True):
        if event_type in SCHEDULING:
            assert event["EventId"] == len(scheduled), f"task id {event['EventId']} at position {len(scheduled)}"
            scheduled[event["EventId"]] = event
            if event_type is T.EVENT_SENT and not entity_request(event).get("signal"):
                calls[entity_request(event)["id"]] = event
        elif event_type in COMPLETES:
            field, answers = COMPLETES[event_type]
            task_id = event[field]
            assert task_id in scheduled, f"{event_type.name} for task {task_id}, which was never scheduled"
            assert T(scheduled[task_id]["EventType"]) in answers, (event_type.name, scheduled[task_id])
            completions.setdefault(task_id, []).append(event)
        elif event_type is T.EVENT_RAISED and event["Name"] in calls:
            responses[event["Name"]] += 1
    for task_id, events in completions.items():
        assert len(events) == 1, f"task {task_id} completed {len(events)} times"
    assert all(count == 1 for count in responses.values()), responses
    if finished:
        for task_id, event in scheduled.items():
            event_type = T(event["EventType"])
            if event_type in (T.TASK_SCHEDULED, T.SUB_ORCHESTRATION_INSTANCE_CREATED):
                assert task_id in completions, f"task {task_id} ({event.get('Name')}) never completed"
        assert set(responses) == set(calls), "an entity call was never answered"
    return completions


def replay(handle: Any, history: list[dict[str, Any]], *, instance_id: str, input_text: str | None) -> dict[str, Any]:
    """Feed a recorded history to the SDK's orchestrator alone, as played events; return its state and the number of
    task ids it numbered.

    Args:
        handle: The orchestrator handle the app registered (its `orchestrator_function` is the user's generator).
        history: The stored history.
        instance_id: The instance it belongs to.
        input_text: The instance's stored input (JSON text).

    Returns:
        ``{"state": <the state JSON, or the error text>, "numbered": <task ids the SDK numbered>}``.
    """
    context_text = json.dumps(
        {
            "history": history,
            "input": json.loads(input_text) if input_text is not None else None,
            "instanceId": instance_id,
            "isReplaying": True,
            "parentInstanceId": None,
            "upperSchemaVersion": 1,
            "upperSchemaVersionNew": 2,
        }
    )
    context = DurableOrchestrationContext.from_json(context_text)
    orchestrator = Orchestrator(handle.orchestrator_function)
    try:
        state = orchestrator.handle(context)
    except Exception as exc:  # what the host hears of it: the worker's "Type: message"
        state = f"{type(exc).__name__}: {exc}"
    return {"state": state, "numbered": context._sequence_number}
