"""Starting an instance id that exists: the extension's default (`overridableExistingInstanceStates`
`NonRunningStates`) refuses while it is pending or running and replaces it once finished; `AnyState` always replaces.
Idempotent starts (one expiry orchestration per conversation) depend on the refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clocks import ManualClock

from agent_host.__main__ import overridable_existing_instance_states

from .driving import OrchestrationHost
from .orchestration_apps import build_orchestration_app

WEBHOOK = "/runtime/webhooks/durabletask"


def test_starting_a_running_id_is_refused_with_409_and_the_instance_keeps_running(
    orchestrations: OrchestrationHost,
) -> None:
    orchestrations.start_new("approval", "waiting", {"requester": "ada"})
    execution = orchestrations.instance("waiting").execution_id

    with pytest.raises(Exception, match="An Orchestration instance with the status Running already exists") as raised:
        orchestrations.call(orchestrations.client().start_new("approval", "waiting", {"requester": "grace"}))
    reply = orchestrations.request("POST", f"{WEBHOOK}/orchestrators/approval/waiting", {"requester": "grace"})

    assert "overridableExistingInstanceStates" in str(raised.value)
    assert reply.status == 409 and reply.json()["error"]["code"] == "instance_exists"
    record = orchestrations.instance("waiting")
    assert (record.status, record.execution_id) == ("Running", execution)
    assert json.loads(record.input or "null") == json.dumps({"requester": "ada"})


def test_a_pending_instance_refuses_a_second_start_too(orchestrations: OrchestrationHost) -> None:
    client = orchestrations.client()
    orchestrations.local.orchestrations.stop()  # nothing runs: the first start stays Pending

    orchestrations.call(client.start_new("sequence", "queued", ["Oslo"]))
    with pytest.raises(Exception, match="with the status Pending already exists"):
        orchestrations.call(client.start_new("sequence", "queued", ["Lima"]))

    assert orchestrations.instance("queued").status == "Pending"


def test_a_finished_instance_is_replaced_by_a_new_start(orchestrations: OrchestrationHost) -> None:
    orchestrations.start_new("sequence", "again", ["Oslo"])
    first = orchestrations.instance("again")

    orchestrations.start_new("sequence", "again", ["Lima"])

    second = orchestrations.instance("again")
    assert first.status == second.status == "Completed"
    assert second.execution_id != first.execution_id
    assert orchestrations.output("again") == ["Hello Lima!"]


def test_any_state_replaces_a_running_instance(tmp_path: Path, clock: ManualClock) -> None:
    running = OrchestrationHost(
        lambda: build_orchestration_app(clock),
        tmp_path / "state",
        clock,
        overridable_existing_instance_states="anystate",  # read ignoring case, as the extension reads it
    )
    try:
        running.start_new("approval", "replaced", {"requester": "ada"})
        first = running.instance("replaced").execution_id
        running.start_new("approval", "replaced", {"requester": "grace"})
        record = running.instance("replaced")
    finally:
        running.stop()

    assert record.execution_id != first and record.status == "Running"
    assert json.loads(record.input or "null") == json.dumps({"requester": "grace"})


@pytest.mark.parametrize(
    ("durable_task", "expected"),
    [({}, "NonRunningStates"), ({"overridableExistingInstanceStates": "AnyState"}, "AnyState")],
)
def test_serve_reads_the_setting_from_host_json(tmp_path: Path, durable_task: dict, expected: str) -> None:
    host_json = tmp_path / "host.json"
    host_json.write_text(json.dumps({"version": "2.0", "extensions": {"durableTask": durable_task}}))

    assert overridable_existing_instance_states(host_json) == expected


def test_serve_refuses_an_unknown_setting_naming_it(tmp_path: Path) -> None:
    host_json = tmp_path / "host.json"
    durable_task = {"overridableExistingInstanceStates": "Sometimes"}
    host_json.write_text(json.dumps({"version": "2.0", "extensions": {"durableTask": durable_task}}))

    with pytest.raises(SystemExit, match="overridableExistingInstanceStates must be AnyState or NonRunningStates"):
        overridable_existing_instance_states(host_json)
