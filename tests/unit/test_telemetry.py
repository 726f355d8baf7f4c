"""Turn metrics through an in-memory OpenTelemetry reader: emitted, with bounded attributes."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import tool
from apps import build_app, driver_for, make_agent
from chat_clients import FailingChatClient, ScriptedChatClient
from metrics import install_metric_reader
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from agent_host import HostSettings
from agent_host._streaming.sqlite_store import SqliteStreamStore


@pytest.fixture
def reader(monkeypatch) -> InMemoryMetricReader:
    return install_metric_reader(monkeypatch)


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = list(metric.data.data_points)
    return found


def test_turn_outcomes_durations_and_state_size_are_recorded(reader) -> None:
    ok = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant")
    ok.run_turn("t1", "hello")
    failing = driver_for(build_app(make_agent(FailingChatClient())), "assistant", state=ok.state)
    failing.run_turn("t2", "again")

    found = points(reader)

    turns = {tuple(sorted(p.attributes.items())): p.value for p in found["agent_host.turns"]}
    assert turns == {
        (("agent", "assistant"), ("outcome", "completed")): 1,
        (("agent", "assistant"), ("error.code", "turn_failed"), ("outcome", "failed")): 1,
    }
    assert sum(p.count for p in found["agent_host.turn.duration"]) == 2
    (size,) = found["agent_host.state.size"]
    assert size.count == 2 and size.max == len(failing.state.encode())
    for name, data_points in found.items():
        for point in data_points:
            # Bounded values only: checkpoints add a step kind (`model`, `tool`) and a reason code.
            assert set(point.attributes) <= {"agent", "outcome", "error.code", "mode", "step", "reason"}, name


def test_evictions_and_capacity_refusals_are_counted(reader) -> None:
    settings = HostSettings(max_turn_records=3)
    app = build_app(settings=settings)
    app.add_agent(make_agent(ScriptedChatClient()), retention_mode="auto", max_state_bytes=4096)
    auto = driver_for(app, "assistant", key="auto")
    for number in range(12):
        auto.run_turn(f"a{number}", f"message number {number} " + "x" * 160)
    strict = build_app(settings=settings)
    strict.add_agent(make_agent(ScriptedChatClient()), retention_mode="keep_all", max_state_bytes=4096)
    keep = driver_for(strict, "assistant", key="keep")
    records = [keep.run_turn(f"k{number}", f"message number {number} " + "x" * 160) for number in range(12)]

    found = points(reader)

    evicted = sum(p.value for p in found["agent_host.retention.evicted_messages"])
    assert evicted == auto.decoded()["truncation"]["evictedMessages"] > 0
    refusals = sum(p.value for p in found["agent_host.retention.capacity_refusals"])
    assert refusals == sum(r["status"] == "failed" for r in records) > 0


def test_replayed_steps_and_turns_without_checkpoints_are_counted(reader, tmp_path) -> None:
    @tool
    def lookup(code: str) -> str:
        """Look a code up."""
        return f"code {code}"

    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    turn = ("run", {"turnId": "t1", "message": 'call lookup {"code": "A"}'})
    first = driver_for(build_app(make_agent(ScriptedChatClient(), tools=[lookup]), stream_store=store), "assistant")
    first.send(turn)
    # The same turn delivered again to a process that never saw its commit: every step comes from the journal.
    again = driver_for(build_app(make_agent(ScriptedChatClient(), tools=[lookup]), stream_store=store), "assistant")
    again.send(turn)
    store.close()
    without_store = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant")
    without_store.run_turn("t1", "hello")

    found = points(reader)

    replayed = {tuple(sorted(p.attributes.items())): p.value for p in found["agent_host.checkpoints.replayed_steps"]}
    assert replayed == {(("agent", "assistant"), ("step", "model")): 2, (("agent", "assistant"), ("step", "tool")): 1}
    (unavailable,) = found["agent_host.checkpoints.unavailable"]
    assert unavailable.attributes == {"agent": "assistant", "reason": "no_store"} and unavailable.value == 1
