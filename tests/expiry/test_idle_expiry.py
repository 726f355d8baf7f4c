"""Idle conversations expire, end to end on the local host with a test clock: the real durable client, the expiry
orchestration's durable timers and its entity calls, the HTTP routes, MCP, orchestrations and workflows."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import azure.durable_functions as df
import pytest
from clocks import EPOCH_MS, ManualClock
from expiry_apps import BRIEF_TTL, CONVERSATIONS, TTL_SECONDS, ExpiryHost, expiry_app
from faults import crash_before_episode_commit
from metrics import counted, install_metric_reader
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from agent_host._local_host.episode import EpisodeCommit

TTL_MS = TTL_SECONDS * 1000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def ttl() -> list[float]:
    """The app's TTL: a test changes it before a restart, as a redeploy would."""
    return [TTL_SECONDS]


@pytest.fixture
def host(tmp_path: Path, clock: ManualClock, ttl: list[float]) -> Iterator[ExpiryHost]:
    running = ExpiryHost(lambda: expiry_app(clock, ttl[0]), tmp_path / "state", clock)
    yield running
    running.stop()


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> InMemoryMetricReader:
    return install_metric_reader(monkeypatch)


def expired_count(reader: InMemoryMetricReader) -> int:
    return sum(counted(reader, "agent_host.retention.expired_conversations").values())


def expiry_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent_host.retention" and "expired" in r.getMessage()]


def test_an_idle_conversation_is_deleted_after_its_ttl_logged_and_counted(
    host: ExpiryHost, reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    host.turn("c1", "My name is Ada.")

    with caplog.at_level(logging.INFO, logger="agent_host.retention"):
        host.advance(TTL_SECONDS - 1)
        kept_status, kept = host.conversation("c1")
        host.advance(1)
        gone_status, gone = host.conversation("c1")

    assert kept_status == 200 and kept["turnCount"] == 1
    assert gone_status == 404 and gone["error"]["code"] == "conversation_not_found"
    assert "was deleted" in gone["error"]["message"]
    watcher = host.watcher("c1")
    assert watcher is not None and watcher.status == "Completed"
    assert json.loads(watcher.output or "null") == {"status": "expired"}
    assert expired_count(reader) == 1
    assert expiry_lines(caplog) == [
        "Conversation c1 of agent assistant expired: idle for 1h 0m (TTL 1h); deleted it with 2 messages and 1 turn "
        "receipts"
    ]


def test_a_turn_within_the_ttl_keeps_the_conversation_and_pushes_its_deadline(host: ExpiryHost) -> None:
    host.turn("c1", "My name is Ada.")
    host.advance(TTL_SECONDS / 2)
    host.turn("c1", "I live in Paris.")

    host.advance(TTL_SECONDS / 2 + 1)  # past the first deadline: the orchestration wakes, finds it active
    status_after_first_deadline, _ = host.conversation("c1")
    next_check = host.check_at("c1")
    host.advance(TTL_SECONDS / 2)

    assert status_after_first_deadline == 200
    assert next_check == EPOCH_MS + TTL_MS // 2 + TTL_MS
    assert host.conversation("c1")[0] == 404


def test_a_retention_change_counts_as_activity_and_reads_do_not(host: ExpiryHost) -> None:
    host.turn("read", "My name is Ada.")
    host.turn("changed", "My name is Grace.")
    host.advance(TTL_SECONDS / 2)

    read = CONVERSATIONS.format(agent="assistant", conversation="read")
    assert host.request("GET", read).status == 200
    assert host.request("GET", f"{read}/messages").status == 200
    changed = CONVERSATIONS.format(agent="assistant", conversation="changed")
    retention = host.request("PUT", f"{changed}/retention", {"mode": "keep_all", "maxStateBytes": 65536})
    assert retention.status == 200
    host.settle()
    host.advance(TTL_SECONDS / 2 + 1)

    assert host.conversation("read")[0] == 404
    assert host.conversation("changed")[0] == 200


def test_a_restart_while_the_timer_waits_still_deletes_the_conversation(host: ExpiryHost) -> None:
    host.turn("c1", "My name is Ada.")
    host.restart()

    host.advance(TTL_SECONDS + 1)

    assert host.conversation("c1")[0] == 404


def test_a_conversation_past_its_ttl_while_the_host_was_down_is_deleted_when_it_starts(host: ExpiryHost) -> None:
    host.turn("c1", "My name is Ada.")
    host.stop()
    host.clock.advance(3 * TTL_SECONDS)

    host.start()
    host.settle()

    assert host.conversation("c1")[0] == 404


def test_a_user_delete_before_expiry_ends_the_watch_without_an_expiry(
    host: ExpiryHost, reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    host.turn("c1", "My name is Ada.")
    assert host.request("DELETE", CONVERSATIONS.format(agent="assistant", conversation="c1")).status == 204

    with caplog.at_level(logging.INFO, logger="agent_host.retention"):
        host.advance(TTL_SECONDS + 1)

    watcher = host.watcher("c1")
    assert watcher is not None and watcher.status == "Completed"
    assert json.loads(watcher.output or "null") == {"status": "gone"}
    assert expired_count(reader) == 0 and expiry_lines(caplog) == []


def test_a_conversation_deleted_and_started_again_is_watched_from_its_new_turns(host: ExpiryHost) -> None:
    host.turn("c1", "My name is Ada.")
    host.request("DELETE", CONVERSATIONS.format(agent="assistant", conversation="c1"))
    host.advance(TTL_SECONDS / 2)
    answer = host.turn("c1", "What is my name?")

    host.advance(TTL_SECONDS / 2 + 1)  # the first deadline: the same orchestration finds the new conversation
    alive = host.conversation("c1")
    host.advance(TTL_SECONDS / 2)

    assert "Ada" not in answer["text"]  # the deleted conversation's history is gone
    assert alive[0] == 200 and alive[1]["turnCount"] == 1
    assert host.conversation("c1")[0] == 404


def test_an_expired_conversation_used_again_starts_fresh_and_is_watched_again(host: ExpiryHost) -> None:
    host.turn("c1", "My name is Ada.")
    host.advance(TTL_SECONDS + 1)
    assert host.conversation("c1")[0] == 404

    answer = host.turn("c1", "What is my name?")
    status, fresh = host.conversation("c1")
    restarted = host.watcher("c1")
    host.advance(TTL_SECONDS + 1)

    assert "Ada" not in answer["text"]
    assert status == 200 and fresh["turnCount"] == 1
    assert restarted is not None and restarted.status == "Running"
    assert host.conversation("c1")[0] == 404


def test_each_agent_keeps_its_own_ttl_and_zero_starts_no_watch(host: ExpiryHost) -> None:
    for agent in ("assistant", "brief", "keeper"):
        host.turn("c1", "My name is Ada.", agent=agent)

    host.advance(BRIEF_TTL.total_seconds() + 1)
    after_brief = {agent: host.conversation("c1", agent)[0] for agent in ("assistant", "brief", "keeper")}
    host.advance(TTL_SECONDS)
    after_ttl = {agent: host.conversation("c1", agent)[0] for agent in ("assistant", "brief", "keeper")}
    host.advance(100 * 24 * 3600)

    assert after_brief == {"assistant": 200, "brief": 404, "keeper": 200}
    assert after_ttl == {"assistant": 404, "brief": 404, "keeper": 200}
    assert host.conversation("c1", "keeper")[0] == 200
    assert host.watcher("c1", "conversation_keeper") is None


def test_the_run_route_and_mcp_tools_start_the_watch(host: ExpiryHost) -> None:
    run = host.request("POST", "/api/agents/assistant/run", {"message": "My name is Ada.", "session_id": "via-run"})
    result = host.call_tool("assistant", {"query": "My name is Grace.", "sessionId": "via-mcp"})
    host.settle()

    assert run.status == 200 and not result.is_error
    assert host.check_at("via-run") == host.check_at("via-mcp") == EPOCH_MS + TTL_MS
    host.advance(TTL_SECONDS + 1)
    assert host.conversation("via-run")[0] == host.conversation("via-mcp")[0] == 404


def test_an_orchestration_agents_conversation_is_watched_and_expires(host: ExpiryHost) -> None:
    instance_id = host.start_new("ask", "ask-1")
    output = host.output(instance_id)
    conversation = output["conversation"]

    assert "Ada" in output["answers"][1]  # both turns went to one conversation
    assert host.check_at(conversation) == EPOCH_MS + TTL_MS
    # One start per conversation and execution: the second turn carried no activity.
    activities = [e for e in host.history(instance_id) if e["EventType"] == 4]  # TaskScheduled
    assert [e["Name"] for e in activities] == ["expiry_watch"]
    host.advance(TTL_SECONDS + 1)
    assert host.conversation(conversation)[0] == 404


def test_a_workflows_node_conversation_is_watched_and_expires(host: ExpiryHost) -> None:
    reply = host.request("POST", "/api/workflows/relay/runs", {"input": "Note that the sky is blue."})
    host.settle()
    run_id = reply.json()["runId"]
    entity = "workflow_agent_relay_noter"

    assert reply.status == 200 and reply.json()["status"] == "completed"
    assert host.check_at(run_id, entity) == EPOCH_MS + TTL_MS
    assert host.entity_state(entity, run_id)["turnCount"] == 1  # type: ignore[index]
    host.advance(TTL_SECONDS + 1)
    state = host.entity_state(entity, run_id)
    assert state is not None and state["deleted"]["existed"] is True and state["messages"] == []


@pytest.mark.parametrize("deleted_by", ["this instance", "another instance"])
def test_a_new_conversation_started_while_the_old_watch_is_finishing_is_still_watched(
    host: ExpiryHost, deleted_by: str
) -> None:
    host.turn("c1", "My name is Ada.")
    if deleted_by == "this instance":
        host.request("DELETE", CONVERSATIONS.format(agent="assistant", conversation="c1"))
    else:
        # Another instance's DELETE: this process still remembers c1 as watched a moment ago (recent.py).
        entity = df.EntityId("conversation_assistant", "c1")
        host.call(host.client().signal_entity(entity, "delete", {"changeId": "elsewhere"}))
        host.settle()
    old = host.watcher("c1")
    finishing, release = threading.Event(), threading.Event()

    def slow_completion(instance_id: str, commit: EpisodeCommit) -> bool:
        # The old orchestration has found the conversation deleted and is about to complete: hold it there.
        if instance_id == old.instance_id and commit.status == "Completed":  # type: ignore[union-attr]
            finishing.set()
            release.wait(30)
        return False

    crash_before_episode_commit(host.local.orchestrations, slow_completion)
    host.clock.advance(TTL_SECONDS + 1)
    host.local.orchestrations.wake()
    assert finishing.wait(30)
    with ThreadPoolExecutor(1) as pool:
        # A new conversation of the same id: its start is refused, as the old orchestration still runs.
        turn = pool.submit(
            host.request,
            "POST",
            f"{CONVERSATIONS.format(agent='assistant', conversation='c1')}/turns",
            {"message": "My name is Grace."},
        )
        time.sleep(0.5)
        release.set()
        reply = turn.result(60)
    host.settle()

    assert reply.status == 200 and host.conversation("c1")[1]["turnCount"] == 1
    assert host.check_at("c1") == EPOCH_MS + TTL_MS + 1000 + TTL_MS
    host.advance(TTL_SECONDS + 1)
    assert host.conversation("c1")[0] == 404


def test_turns_moments_apart_start_the_expiry_orchestration_once(
    host: ExpiryHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[str] = []
    start_new = df.DurableOrchestrationClient.start_new

    async def counting(client: df.DurableOrchestrationClient, name: str, *args: object, **kwargs: object) -> str:
        starts.append(name)
        return await start_new(client, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(df.DurableOrchestrationClient, "start_new", counting)

    for number in range(4):
        host.turn("c1", f"My fact{number} is value{number}.")
    host.turn("c2", "My name is Ada.")

    assert starts == ["expiry_conversation", "expiry_conversation"]  # one per conversation, not per turn
    assert host.check_at("c1") == host.check_at("c2") == EPOCH_MS + TTL_MS


def test_a_longer_ttl_after_a_redeploy_spares_the_conversation_and_reschedules(
    host: ExpiryHost, ttl: list[float]
) -> None:
    host.turn("c1", "My name is Ada.")
    ttl[0] = 3 * TTL_SECONDS
    host.restart()

    host.advance(TTL_SECONDS + 1)  # the old deadline: the check applies the TTL configured now
    spared = host.conversation("c1")[0]
    rescheduled = host.check_at("c1")
    host.advance(2 * TTL_SECONDS)

    assert spared == 200 and rescheduled == EPOCH_MS + 3 * TTL_MS
    assert host.conversation("c1")[0] == 404


def test_expiry_turned_off_ends_the_orchestrations_at_their_next_check_and_deletes_nothing(
    host: ExpiryHost, ttl: list[float]
) -> None:
    host.turn("c1", "My name is Ada.")
    ttl[0] = 0
    host.restart()

    host.advance(TTL_SECONDS + 1)
    watcher = host.watcher("c1")
    host.turn("c1", "What is my name?")
    host.advance(100 * TTL_SECONDS)

    assert watcher is not None and json.loads(watcher.output or "null") == {"status": "off"}
    assert host.conversation("c1")[1]["turnCount"] == 2  # kept, and no new orchestration started with expiry off
    assert host.watcher("c1").status == "Completed"  # type: ignore[union-attr]


def test_an_orchestration_for_an_entity_the_app_no_longer_hosts_stops_without_failing(host: ExpiryHost) -> None:
    watch = {"entity": "conversation_retired", "key": "c1", "ttlSeconds": TTL_SECONDS}
    instance_id = host.start_new("expiry_conversation", "expiry:conversation_retired:c1", watch)

    host.advance(TTL_SECONDS + 1)

    record = host.instance(instance_id)
    assert record.status == "Completed"
    assert json.loads(record.output or "null")["status"] == "failed"
