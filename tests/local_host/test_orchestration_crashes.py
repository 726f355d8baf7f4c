"""Crashes at every point of an orchestration's life, on a real process: before an episode commits, after an activity
ran but before its result was recorded, during a durable timer, during an activity and during an external-event
wait. After each restart the instance resumes; every task completes exactly once and the output is the same as a run
without crashes. (The same points are also hit in-process through the scheduler's fault-injection hooks.)"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from azure.durable_functions.models.history.HistoryEventType import HistoryEventType as T
from faults import crash_after_activity, crash_before_episode_commit

from .crashing_host import DIED_EXIT_CODE
from .driving import OrchestrationHost
from .histories import check_well_formed
from .orchestration_apps import ACTIVITY_DELAY_VARIABLE, CALL_LOG_VARIABLE, TIMER_SECONDS_VARIABLE
from .served import ServedProcess, crashing_command, serve_command

CITIES = ["Tokyo", "Seattle", "London"]
GREETINGS = ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]


def calls(log: Path) -> Counter[str]:
    """How often each activity ran with each input, from the call log."""
    return Counter(log.read_text(encoding="utf-8").splitlines()) if log.exists() else Counter()


def count(history: list[dict], event_type: T) -> int:
    return sum(event["EventType"] == event_type for event in history)


@pytest.mark.parametrize("die_at", ["before-episode-commit", "after-activity"])
def test_a_process_that_dies_mid_step_resumes_with_each_task_done_once(tmp_path: Path, die_at: str) -> None:
    log = tmp_path / "calls.log"
    marker = tmp_path / "died"
    host = ServedProcess(tmp_path, crashing_command(die_at, marker), {CALL_LOG_VARIABLE: str(log)})
    host.start()
    try:
        status, _ = host.request("POST", "/api/start/sequence?id=crash", CITIES)
        assert status == 202
        assert host.wait_for_exit() == DIED_EXIT_CODE  # it died at the chosen point, during the first greeting
        assert marker.exists()
        host.start()
        final = host.wait_until("crash", lambda s: s["runtimeStatus"] == "Completed")
    finally:
        host.stop()

    assert final["output"] == GREETINGS
    history = host.stored_history("crash")
    completions = check_well_formed(history)
    assert sorted(completions) == [0, 1, 2]  # three activities, each completed exactly once
    assert count(history, T.TASK_SCHEDULED) == 3
    ran = calls(log)
    # Dying after the activity ran but before its outcome was recorded runs it again (at least once, as on Azure);
    # dying before the episode commit does not: the outcome was already stored in the inbox.
    assert ran['greet "Tokyo"'] == (2 if die_at == "after-activity" else 1)
    assert ran['greet "Seattle"'] == ran['greet "London"'] == 1


def test_kill_during_a_timer_an_activity_and_an_event_wait(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    env = {CALL_LOG_VARIABLE: str(log), TIMER_SECONDS_VARIABLE: "1.0", ACTIVITY_DELAY_VARIABLE: "1.0"}
    host = ServedProcess(tmp_path, serve_command(), env)
    host.start()
    try:
        status, _ = host.request("POST", "/api/start/durable_wait?id=survivor", "job")
        assert status == 202
        host.wait_until("survivor", lambda s: any(e["EventType"] == "TimerCreated" for e in s["historyEvents"]))
        host.kill()  # during the timer
        time.sleep(1.2)  # the timer falls due while no host runs

        host.start()
        deadline = time.monotonic() + 30
        while calls(log)['slow-start "job"'] < 1:
            assert time.monotonic() < deadline, "the overdue timer did not fire after the restart"
            time.sleep(0.02)
        host.kill()  # during the activity: it started, it will never finish in this process

        host.start()
        host.wait_until("survivor", lambda s: any(e["EventType"] == "TaskCompleted" for e in s["historyEvents"]))
        host.kill()  # during the wait for the external event

        host.start()
        status, _ = host.request("POST", "/runtime/webhooks/durabletask/instances/survivor/raiseEvent/go", "approved")
        assert status == 202
        final = host.wait_until("survivor", lambda s: s["runtimeStatus"] == "Completed")
    finally:
        host.stop()

    assert final["output"] == ["job done", "approved"]  # a plain HTTP client's body, not the SDK's double encoding
    history = host.stored_history("survivor")
    check_well_formed(history)
    assert count(history, T.TIMER_FIRED) == count(history, T.TASK_COMPLETED) == count(history, T.EVENT_RAISED) == 1
    assert calls(log) == Counter({'slow-start "job"': 2, 'slow-end "job"': 1})  # the killed run, then one whole run
    banner = host.logs[0].read_text(errors="replace")
    assert "Orchestrator functions (start: POST http://127.0.0.1:" in banner
    assert "\n  durable_wait\n" in banner and "Activity functions:\n" in banner and "\n  slow\n" in banner


def test_in_process_crash_before_an_episode_commit_replays_the_same_inbox(orchestrations: OrchestrationHost) -> None:
    discarded: list[list[int]] = []

    def crash_once(instance_id: str, commit) -> bool:
        if len(discarded) < 2:
            discarded.append(commit.consumed)
            return True
        return False

    crash_before_episode_commit(orchestrations.local.orchestrations, crash_once)

    instance_id = orchestrations.start_new("sequence", "in-process", CITIES)

    assert orchestrations.output(instance_id) == GREETINGS
    assert discarded[0] == discarded[1]  # the same inbox rows were delivered again, nothing was lost meanwhile
    completions = check_well_formed(orchestrations.history(instance_id))
    assert sorted(completions) == [0, 1, 2]


def test_in_process_activity_outcome_lost_runs_the_activity_again_once(
    orchestrations: OrchestrationHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG_VARIABLE, str(log))
    lost: list[int] = []
    crash_after_activity(orchestrations.local.orchestrations, lambda seq: not lost and not lost.append(1))

    instance_id = orchestrations.start_new("sequence", "lost-outcome", CITIES)

    assert orchestrations.output(instance_id) == GREETINGS
    assert calls(log)['greet "Tokyo"'] == 2
    history = orchestrations.history(instance_id)
    assert sorted(check_well_formed(history)) == [0, 1, 2]
    results = [json.loads(e["Result"]) for e in history if e["EventType"] == T.TASK_COMPLETED]
    assert results == GREETINGS
