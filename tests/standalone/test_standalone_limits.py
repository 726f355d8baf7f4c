"""The Durable Task Scheduler's limits: an entity's instance id (`@conversation_<agent>@<id>`) is at most 100
characters, and a message at most 1 MB. Conversation ids and agent names that cannot fit are refused clearly."""

from __future__ import annotations

import pytest
from apps import make_agent
from chat_clients import ScriptedChatClient
from durabletask.azuremanaged.client import DurableTaskSchedulerClient
from durabletask.worker import TaskHubGrpcWorker

from agent_host import HostSettings, InvalidRequestError
from agent_host._contract import SCHEDULER_MAX_INSTANCE_ID_LENGTH
from agent_host._retention_settings import MAX_STATE_BYTES_CEILING
from agent_host.worker import AgentClient, AgentWorker, worker_options

from .workers import agent_client, running_worker

ENTITY_PREFIX = "@conversation_assistant@"
LONGEST_ID = SCHEDULER_MAX_INSTANCE_ID_LENGTH - len(ENTITY_PREFIX)
DTS_MESSAGE_BYTES = 1024 * 1024


def test_the_longest_conversation_id_that_fits_takes_turns(hub: str) -> None:
    conversation_id = "a" * LONGEST_ID

    with running_worker(hub, [make_agent(ScriptedChatClient())]), agent_client(hub, durable_task_scheduler=True) as c:
        answer = c.conversation("assistant", conversation_id).send("Hello")

    assert len(ENTITY_PREFIX + conversation_id) == SCHEDULER_MAX_INSTANCE_ID_LENGTH
    assert answer["text"] == "reply 1: Hello"


def test_a_conversation_id_over_the_scheduler_budget_is_refused_naming_the_limit(hub: str) -> None:
    with agent_client(hub, durable_task_scheduler=True) as client, pytest.raises(InvalidRequestError) as refused:
        client.conversation("assistant", "a" * (LONGEST_ID + 1))

    assert refused.value.code == "invalid_conversation_id"
    assert f"at most {LONGEST_ID}" in refused.value.message and "100 characters" in refused.value.message


def test_a_scheduler_client_applies_the_budget_by_itself() -> None:
    scheduler = DurableTaskSchedulerClient(host_address="localhost:1", taskhub="hub", token_credential=None)

    client = AgentClient(scheduler, settings=HostSettings())
    scheduler.close()

    assert client.durable_task_scheduler is True


def test_an_agent_name_too_long_for_scheduler_entity_ids_fails_at_registration() -> None:
    worker = AgentWorker(
        TaskHubGrpcWorker(host_address="localhost:1", **worker_options()),
        settings=HostSettings(durable_task_scheduler=True),
    )

    with pytest.raises(ValueError, match="too long for the Durable Task Scheduler"):
        worker.add_agent(make_agent(ScriptedChatClient(), name="a" * 50))
    worker.add_agent(make_agent(ScriptedChatClient(), name="a" * 49))


def test_no_conversation_budget_reaches_the_scheduler_message_cap(hub: str) -> None:
    with agent_client(hub) as client, pytest.raises(InvalidRequestError) as refused:
        client.conversation("assistant", "c1").set_retention("keep_all", MAX_STATE_BYTES_CEILING + 1)

    assert MAX_STATE_BYTES_CEILING < DTS_MESSAGE_BYTES
    assert refused.value.code == "invalid_retention"
