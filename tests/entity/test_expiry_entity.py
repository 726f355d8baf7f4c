"""The entity's `expire_if_idle` operation on the host's JSON batches: what counts as activity, whose time decides, and
that an expired conversation leaves exactly the tombstone a DELETE leaves."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from apps import build_app, driver_for, make_agent
from batches import EntityDriver
from chat_clients import FailingChatClient, ScriptedChatClient
from clocks import EPOCH_MS, ManualClock
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import agent_host._telemetry as telemetry_module
from agent_host import HostSettings

TTL_SECONDS = 3600
TTL_MS = TTL_SECONDS * 1000


def expire(driver: EntityDriver, now_ms: int, ttl_seconds: float = TTL_SECONDS) -> dict[str, Any]:
    """Run the expiry orchestration's call, as it sends it; return the operation's decoded result."""
    (result,) = driver.send(("expire_if_idle", {"nowMs": now_ms, "ttlSeconds": ttl_seconds}))
    assert not result["isError"], result
    return json.loads(result["result"])


def conversation(clock: ManualClock, key: str, client: Any = None) -> EntityDriver:
    app = build_app(make_agent(client or ScriptedChatClient()), clock=clock)
    return driver_for(app, "assistant", key=key)


def test_an_idle_conversation_is_deleted_with_the_tombstone_a_delete_leaves() -> None:
    clock = ManualClock()
    deleted, expired = conversation(clock, "c1"), conversation(clock, "c1")
    for driver in (deleted, expired):
        driver.run_turn("t1", "My name is Ada.")
        driver.run_turn("t2", "What is my name?")
    clock.advance(TTL_SECONDS)

    deleted.send(("delete", {"changeId": "user-delete"}))
    verdict = expire(expired, EPOCH_MS + TTL_MS)

    assert verdict == {"status": "expired"}
    by_delete, by_expiry = deleted.decoded(), expired.decoded()
    assert by_expiry["deleted"] == {"at": EPOCH_MS + TTL_MS, "existed": True, "turns": ["t1", "t2"]}
    assert by_expiry["messages"] == [] and "session" not in by_expiry and by_expiry["turnCount"] == 0
    assert by_expiry["appliedDeletes"] == [f"expiry-{EPOCH_MS + TTL_MS:x}"]
    assert {**by_delete, "appliedDeletes": []} == {**by_expiry, "appliedDeletes": []}


def test_a_conversation_used_within_its_ttl_is_left_as_stored_and_says_when_it_would_be_idle() -> None:
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.run_turn("t1", "hello")
    stored = driver.state

    verdict = expire(driver, EPOCH_MS + TTL_MS - 1)

    assert verdict == {"status": "active", "checkAt": EPOCH_MS + TTL_MS}
    assert driver.state == stored  # nothing written: a check is not activity


@pytest.mark.parametrize("activity", ["turn", "failed turn", "retention change"])
def test_turns_failed_turns_and_retention_changes_count_as_activity(activity: str) -> None:
    clock = ManualClock()
    client = FailingChatClient() if activity == "failed turn" else ScriptedChatClient()
    driver = conversation(clock, "c1", client)
    driver.run_turn("t1", "hello")
    clock.advance(TTL_SECONDS / 2)

    if activity == "retention change":
        retention = {"mode": "keep_all", "maxStateBytes": 65536}
        driver.send(("set_retention", {"changeId": "r1", "retention": retention}))
    else:
        driver.run_turn("t2", "still here")
    verdict = expire(driver, EPOCH_MS + TTL_MS)

    assert verdict == {"status": "active", "checkAt": EPOCH_MS + TTL_MS // 2 + TTL_MS}
    assert driver.decoded()["updatedAt"] == EPOCH_MS + TTL_MS // 2


def test_the_orchestrations_time_decides_never_the_entitys_clock() -> None:
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.run_turn("t1", "hello")
    clock.advance(10 * TTL_SECONDS)  # this process's clock is far ahead of the orchestration's

    verdict = expire(driver, EPOCH_MS + TTL_MS - 1)

    assert verdict == {"status": "active", "checkAt": EPOCH_MS + TTL_MS}


def test_the_ttl_the_check_carries_applies_so_a_changed_setting_takes_effect_at_the_next_check() -> None:
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.run_turn("t1", "hello")

    longer = expire(driver, EPOCH_MS + TTL_MS, ttl_seconds=2 * TTL_SECONDS)
    shorter = expire(driver, EPOCH_MS + TTL_MS // 2, ttl_seconds=TTL_SECONDS / 4)

    assert longer == {"status": "active", "checkAt": EPOCH_MS + 2 * TTL_MS}
    assert shorter == {"status": "expired"}


def test_a_deleted_or_missing_conversation_is_gone_and_nothing_is_written() -> None:
    clock = ManualClock()
    missing = conversation(clock, "never")
    tombstoned = conversation(clock, "c1")
    tombstoned.run_turn("t1", "hello")
    tombstoned.send(("delete", {"changeId": "d1"}))
    tombstone = tombstoned.state

    assert expire(missing, EPOCH_MS + 10 * TTL_MS) == {"status": "gone"}
    assert expire(tombstoned, EPOCH_MS + 10 * TTL_MS) == {"status": "gone"}
    assert missing.state is None
    assert tombstoned.state == tombstone


def test_a_ttl_of_zero_means_expiry_is_off_and_nothing_is_deleted() -> None:
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.run_turn("t1", "hello")
    stored = driver.state

    assert expire(driver, EPOCH_MS + 100 * TTL_MS, ttl_seconds=0) == {"status": "off"}
    assert driver.state == stored


def test_state_that_is_not_json_is_left_as_it_is_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.state = "{not json"

    with caplog.at_level(logging.WARNING, logger="agent_host.retention"):
        verdict = expire(driver, EPOCH_MS + 100 * TTL_MS)

    assert verdict == {"status": "unreadable"}
    assert driver.state == "{not json"
    assert any("could not be checked for expiry" in record.getMessage() for record in caplog.records)


def test_an_expiry_is_logged_on_the_retention_logger_and_counted_in_the_metrics(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(telemetry_module, "_telemetry", telemetry_module.TurnTelemetry(provider.get_meter("test")))
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.run_turn("t1", "hello")
    driver.run_turn("t2", "again")
    kept = conversation(clock, "c2")
    kept.run_turn("t1", "hello")

    with caplog.at_level(logging.INFO, logger="agent_host.retention"):
        expire(driver, EPOCH_MS + TTL_MS + 90_000_000)
        expire(kept, EPOCH_MS + 1000)

    lines = [record.getMessage() for record in caplog.records if record.name == "agent_host.retention"]
    assert lines == [
        "Conversation c1 of agent assistant expired: idle for 1d 2h (TTL 1h); deleted it with 4 messages and 2 turn "
        "receipts"
    ]
    metrics = reader.get_metrics_data()
    points = [
        point
        for resource in metrics.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "agent_host.retention.expired_conversations"
        for point in metric.data.data_points
    ]
    assert [(dict(point.attributes), point.value) for point in points] == [({"agent": "assistant"}, 1)]


def test_a_malformed_check_fails_the_operation_and_changes_nothing() -> None:
    clock = ManualClock()
    driver = conversation(clock, "c1")
    driver.run_turn("t1", "hello")
    stored = driver.state

    (result,) = driver.send(("expire_if_idle", {"nowMs": EPOCH_MS, "ttlSeconds": -1}))

    assert result["isError"] and "ttlSeconds" in result["result"]
    assert driver.state == stored


def test_an_app_with_expiry_off_still_answers_a_running_orchestrations_check() -> None:
    clock = ManualClock()
    app = build_app(make_agent(ScriptedChatClient()), settings=HostSettings(conversation_ttl_seconds=0), clock=clock)
    driver = driver_for(app, "assistant", key="c1")
    driver.run_turn("t1", "hello")

    assert expire(driver, EPOCH_MS + 2 * TTL_MS) == {"status": "expired"}
