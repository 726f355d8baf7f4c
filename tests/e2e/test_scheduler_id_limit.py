"""On the Durable Task Scheduler an entity's id `@conversation_<agent>@<conversation id>` is at most 100 characters.

With `DURABLE_TASK_SCHEDULER_CONNECTION_STRING` set, a conversation id that would make a longer entity id is refused
with a clear 400 on every way in (turns, conversations, `/run`), before anything is signalled; on Azure Storage the
usual 128 characters stand. The limit per agent is 85 minus the agent name's length.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apps import build_app, make_agent
from hosting import RunningHost

from agent_host import AgentFunctionApp, HostSettings, OfflineChatClient

AGENT = "assistant"
LIMIT = 85 - len(AGENT)
SCHEDULER = HostSettings.from_environment(
    {"DURABLE_TASK_SCHEDULER_CONNECTION_STRING": "Endpoint=http://x;Authentication=None"}
)


@pytest.fixture
def scheduler_host(tmp_path: Path) -> Iterator[RunningHost]:
    running = RunningHost(lambda: build_app(make_agent(OfflineChatClient(), name=AGENT), settings=SCHEDULER), tmp_path)
    yield running
    running.stop()


def test_the_connection_setting_says_the_app_runs_on_the_scheduler() -> None:
    assert SCHEDULER.durable_task_scheduler is True
    assert (
        HostSettings.from_environment({"DURABLE_TASK_SCHEDULER_CONNECTION_STRING": ""}).durable_task_scheduler is False
    )


def test_the_longest_id_that_fits_takes_turns_and_one_more_character_is_refused(scheduler_host: RunningHost) -> None:
    fits, too_long = "a" * LIMIT, "b" * (LIMIT + 1)

    taken = scheduler_host.request("POST", f"/api/agents/{AGENT}/conversations/{fits}/turns", {"message": "Hi."})
    refused = scheduler_host.request("POST", f"/api/agents/{AGENT}/conversations/{too_long}/turns", {"message": "Hi."})
    read = scheduler_host.request("GET", f"/api/agents/{AGENT}/conversations/{too_long}")

    assert len(f"@conversation_{AGENT}@{fits}") == 100
    assert (taken.status, taken.json()["conversationId"]) == (200, fits)
    assert refused.status == read.status == 400
    error = refused.json()["error"]
    assert error["code"] == "invalid_conversation_id"
    assert f"takes at most {LIMIT} on the Durable Task Scheduler" in error["message"]
    assert f"'@conversation_{AGENT}@'" in error["message"] and "100 characters" in error["message"]
    scheduler_host.wait_idle()
    listed = scheduler_host.request("GET", f"/api/agents/{AGENT}/conversations")
    assert [item["conversationId"] for item in listed.json()["conversations"]] == [fits]


def test_the_run_route_refuses_a_session_id_that_does_not_fit(scheduler_host: RunningHost) -> None:
    reply = scheduler_host.request("POST", f"/api/agents/{AGENT}/run", {"message": "Hi.", "session_id": "c" * 80})

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "invalid_conversation_id"


def test_on_azure_storage_an_id_of_128_characters_is_taken(tmp_path: Path) -> None:
    running = RunningHost(lambda: build_app(make_agent(OfflineChatClient(), name=AGENT)), tmp_path)
    try:
        reply = running.request("POST", f"/api/agents/{AGENT}/conversations/{'d' * 128}/turns", {"message": "Hi."})
    finally:
        running.stop()

    assert reply.status == 200


def test_an_agent_name_that_leaves_no_room_for_the_ids_the_host_makes_is_refused_at_startup() -> None:
    longest = "n" * 49  # leaves 36 characters, an orchestration's new_uuid()

    AgentFunctionApp(agents=[make_agent(OfflineChatClient(), name=longest)], settings=SCHEDULER)
    with pytest.raises(ValueError, match=r"too long for the Durable Task Scheduler.*at most 49 characters"):
        AgentFunctionApp(agents=[make_agent(OfflineChatClient(), name=longest + "n")], settings=SCHEDULER)
