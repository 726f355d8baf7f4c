"""Semantics of the real host that the local host keeps: replay, custom status, determinism, retries, timers, events,
entities, termination and the things it refuses, each through the real SDK on a running local host."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from azure.durable_functions.models.history.HistoryEventType import HistoryEventType as T
from clocks import EPOCH_MS, ManualClock
from faults import deliver_twice

from agent_host._local_host.outbox import InboxKind, OrchestrationEvent

from .driving import OrchestrationHost
from .histories import check_well_formed, entity_request, history_timestamp
from .orchestration_apps import (
    CALL_LOG_VARIABLE,
    CODE,
    REPLAY_LOG,
    TIMER_SECONDS_VARIABLE,
    build_orchestration_app,
)


def events_of(history: list[dict], event_type: T) -> list[dict]:
    return [event for event in history if event["EventType"] == event_type]


def test_is_replaying_and_current_time_come_from_the_episode_layout(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("replay_facts", "facts")
    orchestrations.clock.advance(5)

    orchestrations.raise_event(instance_id, "next", None)

    # Episode 1 ran "before" live; episode 2 replayed it and ran "after" live.
    assert REPLAY_LOG[instance_id] == [(False, "before"), (True, "before"), (False, "after")]
    first, second = orchestrations.output(instance_id)
    assert first["time"] == "2023-11-14T22:13:20+00:00"  # the first OrchestratorStarted: the app clock's start
    assert second["time"] == "2023-11-14T22:13:25+00:00"  # the second one, five seconds later
    assert uuid.UUID(first["uuid"]) != uuid.UUID(second["uuid"])
    started = events_of(orchestrations.history(instance_id), T.ORCHESTRATOR_STARTED)
    assert [event["Timestamp"] for event in started] == [
        history_timestamp(EPOCH_MS),
        history_timestamp(EPOCH_MS + 5000),
    ]


def test_custom_status_is_kept_when_an_episode_sends_none(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "kept")
    waiting = orchestrations.instance(instance_id).custom_status

    orchestrations.raise_event(instance_id, "decision", "no")

    last_state = json.loads(orchestrations.recorder.states[instance_id])
    assert "customStatus" not in last_state  # set only while not replaying: the last episode sent none
    assert waiting == orchestrations.instance(instance_id).custom_status == '{"stage": "waiting for approval"}'
    assert orchestrations.instance(instance_id).status == "Completed"


def test_a_changed_orchestrator_fails_the_instance_as_non_deterministic(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("changing_code", "changed")
    assert events_of(orchestrations.history(instance_id), T.TASK_COMPLETED)  # greet ran; now it waits for "continue"

    CODE["activity"] = "square"  # the code changes while the instance waits
    try:
        orchestrations.raise_event(instance_id, "continue", None)
    finally:
        CODE["activity"] = "greet"

    record = orchestrations.instance(instance_id)
    assert record.status == "Failed"
    message = json.loads(record.output)
    assert message.startswith(
        "Orchestrator function 'changing_code' failed: Non-deterministic orchestrator: action 1 is activity "
        "'square' in this replay, but its history has activity 'greet'."
    )
    assert "datetime.now()" in message
    assert len(events_of(orchestrations.history(instance_id), T.TASK_SCHEDULED)) == 1  # square was never scheduled


def test_call_http_fails_the_orchestration_naming_it(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("http_caller", "http")

    record = orchestrations.instance(instance_id)
    assert record.status == "Failed"
    assert "context.call_http('https://example.com/status') is not supported by the local host" in record.output
    assert "Make the HTTP call in an activity function" in record.output


def test_calling_an_undefined_activity_fails_that_task_as_on_azure(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("missing_activity", "missing")

    output = orchestrations.output(instance_id)
    assert output.startswith(
        "The function 'no_such_activity' doesn't exist, is disabled, or is not an activity function. "
        "The app's activity functions: classify, expiry_watch, explode, flaky, greet, slow, square."
    )


def test_calling_an_undefined_entity_fails_that_call(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("unknown_entity", "no-entity")

    assert orchestrations.output(instance_id) == (
        "The app has no entity function named 'nosuch' (its entities: counter, relay)."
    )


def test_events_raised_before_their_wait_are_kept_and_delivered_once_each(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("two_events", "events")
    client = orchestrations.client()

    # Both arrive while the orchestrator waits for "start", not for "item": they wait in the inbox. Handed to the SDK
    # now, it would park them with a "Potential duplicate Task completion" warning (an error in this suite), keep only
    # the last one and replay it to both waits.
    orchestrations.call(client.raise_event(instance_id, "item", {"n": 1}))
    orchestrations.call(client.raise_event(instance_id, "item", {"n": 2}))
    orchestrations.settle()
    assert orchestrations.instance(instance_id).status == "Running"
    orchestrations.raise_event(instance_id, "start", None)

    assert orchestrations.output(instance_id) == ['{"n": 1}', '{"n": 2}']  # the data's JSON text, as on Azure
    raised = events_of(orchestrations.history(instance_id), T.EVENT_RAISED)
    assert [event["Name"] for event in raised] == ["start", "item", "item"]


def test_a_cancelled_timer_is_deleted_and_never_fires(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "cancelled")
    store = orchestrations.local.orchestrations.store
    (pending,) = store.load_episode(instance_id, EPOCH_MS + 10**9).inbox  # the timer, due in 60 s

    orchestrations.raise_event(instance_id, "decision", "yes")

    assert pending.kind.value == "timer"
    assert store.load_episode(instance_id, EPOCH_MS + 10**9).inbox == []  # cancelled: its row went with the episode
    orchestrations.advance(3600)
    history = orchestrations.history(instance_id)
    (created,) = events_of(history, T.TIMER_CREATED)
    assert created["FireAt"] == history_timestamp(EPOCH_MS + 60_000)
    assert not events_of(history, T.TIMER_FIRED)


def test_a_timer_fires_when_its_time_comes_and_not_before(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "deadline")

    orchestrations.advance(59)
    assert orchestrations.instance(instance_id).status == "Running"
    orchestrations.advance(2)

    assert orchestrations.output(instance_id) == {"decision": None, "timedOut": True}
    (fired,) = events_of(orchestrations.history(instance_id), T.TIMER_FIRED)
    assert fired["TimerId"] == 0


def test_timers_fire_on_real_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMER_SECONDS_VARIABLE, "0.3")
    running = OrchestrationHost(build_orchestration_app, tmp_path, ManualClock(), deterministic=False)
    try:
        client = running.client()
        instance_id = running.call(client.start_new("durable_wait", None, "real time"))
        for _ in range(100):  # no clock is moved and nothing wakes the timer loop: real time must fire it
            if events_of(running.history(instance_id), T.TASK_COMPLETED):
                break
            time.sleep(0.05)
        running.call(client.raise_event(instance_id, "go", "now"))
        running.settle()
        assert running.output(instance_id) == ["real time done", '"now"']
    finally:
        running.stop()


def test_retried_sub_orchestrations_number_each_attempt_and_timer(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("retried_child", "retried-child")
    for _ in range(5):
        orchestrations.advance(1)

    assert orchestrations.output(instance_id) == (
        "Orchestrator function 'failure_uncaught' failed: Activity function 'explode' failed: ValueError: cannot "
        "process the invoice"
    )
    history = orchestrations.history(instance_id)
    scheduled = [(event["EventType"], event["EventId"]) for event in history if event["EventId"] >= 0]
    assert scheduled == [
        (T.SUB_ORCHESTRATION_INSTANCE_CREATED, 0),
        (T.TIMER_CREATED, 1),
        (T.SUB_ORCHESTRATION_INSTANCE_CREATED, 2),
        (T.TIMER_CREATED, 3),  # the SDK waits for one more timer after the last attempt
    ]
    children = {event["InstanceId"] for event in events_of(history, T.SUB_ORCHESTRATION_INSTANCE_CREATED)}
    assert len(children) == 2
    assert all(orchestrations.instance(child).status == "Failed" for child in children)
    check_well_formed(history)


def test_a_custom_status_over_16_kb_fails_the_instance(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("chatty_status", "chatty")

    record = orchestrations.instance(instance_id)
    assert record.status == "Failed"
    assert "The custom status is 18004 bytes as UTF-16 JSON, over the 16384-byte limit" in record.output


def test_terminate_ends_the_instance_and_later_events_are_refused(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("approval", "terminated")
    client = orchestrations.client()

    orchestrations.call(client.terminate(instance_id, "no longer needed"))
    orchestrations.settle()

    record = orchestrations.instance(instance_id)
    assert (record.status, json.loads(record.output)) == ("Terminated", "no longer needed")
    terminated = events_of(orchestrations.history(instance_id), T.EXECUTION_TERMINATED)
    assert [event["Input"] for event in terminated] == ["no longer needed"]
    with pytest.raises(Exception, match=f"Instance with ID {instance_id} is gone"):
        orchestrations.call(client.raise_event(instance_id, "decision", "late"))
    orchestrations.advance(120)  # its timer was dropped with the execution
    assert not events_of(orchestrations.history(instance_id), T.TIMER_FIRED)


def test_entity_calls_get_one_response_even_when_the_operation_is_delivered_twice(
    orchestrations: OrchestrationHost,
) -> None:
    deliver_twice(orchestrations.local.scheduler, lambda name, key, signal: signal.request_id is not None)

    instance_id = orchestrations.start_new("entity_calls", "twice")

    history = orchestrations.history(instance_id)
    check_well_formed(history)  # one EventRaised per request id, or the SDK would have warned (an error here)
    calls = [entity_request(event) for event in events_of(history, T.EVENT_SENT)]
    assert [call["op"] for call in calls] == ["add", "add", "get", "fail"]
    first, second, failure = orchestrations.output(instance_id)
    assert (first, failure) == (5, "the counter refuses")
    assert second == 5 + 5 + 10 + 0  # the duplicated add ran twice (at-least-once), the duplicated get changed nothing


def test_signals_an_entity_function_returns_are_delivered(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("signal_relay", "relay")
    orchestrations.settle()

    assert orchestrations.output(instance_id) == "relayed"
    assert orchestrations.local.store.read_state("counter", "relayed") == "7"


def test_parallel_instances_run_on_the_worker_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG_VARIABLE, str(log))
    running = OrchestrationHost(build_orchestration_app, tmp_path / "state", ManualClock(), deterministic=False)
    try:
        client = running.client()
        ids = [running.call(client.start_new("fan_out", None, 6)) for _ in range(5)]
        running.settle()
        assert [running.output(instance_id) for instance_id in ids] == [55] * 5
        for instance_id in ids:
            completions = check_well_formed(running.history(instance_id))
            assert sorted(completions) == list(range(6))
        assert len(log.read_text().splitlines()) == 30  # each square ran once
    finally:
        running.stop()


def test_a_call_whose_entity_function_keeps_failing_is_answered_with_a_failure(
    orchestrations: OrchestrationHost,
) -> None:
    instance_id = orchestrations.start_new("dead_letter_call", "dead-letter")
    for _ in range(100):  # the entity scheduler retries on real time (0.2 s, then 0.4 s) before it dead-letters
        if orchestrations.instance(instance_id).is_terminal:
            break
        time.sleep(0.05)
        orchestrations.settle()

    assert orchestrations.output(instance_id) == (
        "The entity operation 'explode' on @relay@r2 failed 3 times and was dead-lettered; see the host log."
    )
    check_well_formed(orchestrations.history(instance_id))


def test_a_duplicate_completion_in_the_inbox_never_reaches_the_orchestrator(orchestrations: OrchestrationHost) -> None:
    instance_id = orchestrations.start_new("changing_code", "duplicate")
    (completed,) = events_of(orchestrations.history(instance_id), T.TASK_COMPLETED)
    duplicate = {**completed, "IsPlayed": False, "Result": '"a second outcome"'}
    execution_id = orchestrations.instance(instance_id).execution_id
    now = orchestrations.clock.now_ms()
    orchestrations.local.orchestrations.store.send(
        [OrchestrationEvent(instance_id, execution_id, InboxKind.COMPLETION, duplicate, now, now)]
    )

    # Delivered to the SDK, the duplicate would be parked with a warning (an error in this suite) and the instance
    # would fail; the episode drops it because task 0 is no longer open.
    orchestrations.raise_event(instance_id, "continue", None)

    assert orchestrations.instance(instance_id).status == "Completed"
    assert orchestrations.output(instance_id) == "Hello v1!"
    assert len(events_of(orchestrations.history(instance_id), T.TASK_COMPLETED)) == 1
