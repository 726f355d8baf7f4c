"""Golden histories: each orchestrator pattern runs on the local host, and its recorded history is checked three ways.

1. Against a golden file in tests/data/orchestrations/ (ids and tracebacks normalized), so any change to event order,
   task ids, pairing or encodings shows up as a diff. Regenerate with UPDATE_ORCHESTRATION_GOLDENS=1 and review it.
2. For shape: task ids by position, every completion paired once with its scheduling event, entity responses paired
   with their calls by request id (`check_well_formed`).
3. For replay-equivalence: the final history fed to the SDK's orchestrator alone yields the same actions, output and
   custom status as the live run's last episode, and numbers exactly the tasks the history scheduled.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .driving import OrchestrationHost
from .histories import SCHEDULING, check_well_formed, normalize, replay, without_tracebacks
from .orchestration_apps import APPROVAL_TIMEOUT, FLAKY_FAILURES

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "orchestrations"
UPDATE = os.environ.get("UPDATE_ORCHESTRATION_GOLDENS") == "1"


def _nothing(host: OrchestrationHost, instance_id: str) -> None:
    """Patterns that finish on their own once started."""


def _approve(host: OrchestrationHost, instance_id: str) -> None:
    host.raise_event(instance_id, "decision", "approve")


def _let_deadline_pass(host: OrchestrationHost, instance_id: str) -> None:
    host.advance(APPROVAL_TIMEOUT.total_seconds() + 1)


def _advance_until_finished(host: OrchestrationHost, instance_id: str) -> None:
    """Retry timers are durable timers: move the clock a second at a time until the instance finishes."""
    for _ in range(20):
        if host.instance(instance_id).is_terminal:
            return
        host.advance(1)
    raise AssertionError(f"{instance_id} did not finish")


@dataclass(frozen=True)
class Pattern:
    name: str
    orchestrator: str
    input: Any
    status: str
    output: Any
    drive: Callable[[OrchestrationHost, str], None] = _nothing


PATTERNS = [
    Pattern(
        "sequence",
        "sequence",
        ["Tokyo", "Seattle", "London"],
        "Completed",
        ["Hello Tokyo!", "Hello Seattle!", "Hello London!"],
    ),
    Pattern("fan_out_fan_in", "fan_out", 4, "Completed", 0 + 1 + 4 + 9),
    Pattern("conditional_even", "conditional", 4, "Completed", ["even", 16]),
    Pattern("conditional_odd", "conditional", 3, "Completed", ["odd", "Hello 3!"]),
    Pattern("approval_event", "approval", None, "Completed", {"decision": '"approve"', "timedOut": False}, _approve),
    Pattern(
        "approval_timeout", "approval", None, "Completed", {"decision": None, "timedOut": True}, _let_deadline_pass
    ),
    Pattern("entity_call_and_signal", "entity_calls", None, "Completed", [5, 15, "the counter refuses"]),
    Pattern(
        "sub_orchestration",
        "parent",
        None,
        "Completed",
        [{"parent": "golden-sub_orchestration", "squared": 9}, {"parent": "golden-sub_orchestration", "squared": 16}],
    ),
    Pattern(
        "retry",
        "retrying",
        "golden",
        "Completed",
        [
            "golden-recovers succeeded on attempt 3",
            "Activity function 'flaky' failed: ConnectionError: attempt 2 of golden-fails failed ",
        ],
        _advance_until_finished,
    ),
    Pattern(
        "failure_caught",
        "failure_caught",
        None,
        "Completed",
        "caught: Activity function 'explode' failed: ValueError: cannot process the order ",
    ),
    Pattern(
        "failure_uncaught",
        "failure_uncaught",
        None,
        "Failed",
        "Orchestrator function 'failure_uncaught' failed: Activity function 'explode' failed: ValueError: cannot "
        "process the invoice \n <traceback>",
    ),
    Pattern("continue_as_new", "counting", 0, "Completed", "counted to 3"),
]


def _state(text: str) -> dict[str, Any]:
    """An orchestrator's answer as a comparable dict: its state, or for a user exception its message and state."""
    message, label, state = text.partition("\n\n$OutOfProcData$:")
    if label:
        return {"raised": without_tracebacks(message), **json.loads(state)}
    return json.loads(text)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda pattern: pattern.name)
def test_pattern_history_is_golden_well_formed_and_replays(orchestrations: OrchestrationHost, pattern: Pattern) -> None:
    FLAKY_FAILURES.clear()
    instance_id = f"golden-{pattern.name}"

    orchestrations.start_new(pattern.orchestrator, instance_id, pattern.input)
    pattern.drive(orchestrations, instance_id)

    record = orchestrations.instance(instance_id)
    history = orchestrations.history(instance_id)
    assert record.status == pattern.status
    assert without_tracebacks(json.loads(record.output or "null")) == pattern.output
    check_well_formed(history)
    recorded = {
        "orchestrator": pattern.orchestrator,
        "input": json.loads(record.input) if record.input is not None else None,
        "runtimeStatus": record.status,
        "output": without_tracebacks(json.loads(record.output or "null")),
        "customStatus": json.loads(record.custom_status) if record.custom_status is not None else None,
        "history": normalize(history),
    }
    golden = GOLDEN / f"{pattern.name}.json"
    if UPDATE:
        golden.write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
    assert golden.exists(), f"{golden} is missing; run with UPDATE_ORCHESTRATION_GOLDENS=1 and review it"
    assert recorded == json.loads(golden.read_text(encoding="utf-8"))

    handle = orchestrations.local.durable_functions.orchestrators[pattern.orchestrator].user_function
    replayed = replay(handle, history, instance_id=instance_id, input_text=record.input)
    assert _state(replayed["state"]) == _state(orchestrations.recorder.states[instance_id])
    assert replayed["numbered"] == sum(event["EventType"] in SCHEDULING for event in history)
