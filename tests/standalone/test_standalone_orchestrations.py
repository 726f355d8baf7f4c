"""The function app's orchestration scenarios (`orchestration_scenarios`) as durabletask orchestrations on a worker,
against the in-memory backend: the same orchestrator bodies through `AgentWorker.get_agent`, the same answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orchestration_scenarios as scenarios
from agent_framework import Agent
from chat_clients import ScriptedChatClient
from durabletask import task
from orchestration_scenarios import CHAIN_ANSWERS, fan_out_answers, heard_script

from agent_host.worker import AgentClient, AgentWorker

from .workers import agent_client, running_worker

RunOrchestration = Callable[[str, Any], Any]


@contextmanager
def orchestrations(
    hub: str, writer: ScriptedChatClient, editor: ScriptedChatClient
) -> Iterator[tuple[RunOrchestration, AgentClient]]:
    """A worker hosting `writer` and `editor` with an orchestrator per scenario, and a function that runs one by name
    to its output; with an `AgentClient` on the same task hub."""
    hosted: list[AgentWorker] = []

    def agent(context: task.OrchestrationContext, name: str) -> Any:
        return hosted[0].get_agent(context, name)

    def chain(context: task.OrchestrationContext, _: Any) -> scenarios.Scenario:
        return (yield from scenarios.chain(agent(context, "writer")))

    def join(context: task.OrchestrationContext, request: dict[str, str]) -> scenarios.Scenario:
        return (yield from scenarios.join(agent(context, "writer"), request))

    def fan_out(context: task.OrchestrationContext, topics: list[str]) -> scenarios.Scenario:
        writer, editor = agent(context, "writer"), agent(context, "editor")
        return (yield from scenarios.fan_out(writer, editor, topics, task.when_all))

    def review(context: task.OrchestrationContext, text: str) -> scenarios.Scenario:
        return (yield from scenarios.review(agent(context, "editor"), text))

    agents = [Agent(writer, name="writer"), Agent(editor, name="editor")]
    with (
        running_worker(hub, agents, orchestrators=[chain, join, fan_out, review]) as worker,
        agent_client(hub) as client,
    ):
        hosted.append(worker)

        def run(name: str, orchestration_input: Any = None) -> Any:
            instance = client.client.schedule_new_orchestration(name, input=orchestration_input)
            state = client.client.wait_for_orchestration_completion(instance, timeout=60)
            assert state is not None and state.serialized_output is not None, state
            return json.loads(state.serialized_output)

        yield run, client


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [message["text"] for message in messages]


def test_the_second_call_remembers_the_first_and_the_orchestration_returns_both(hub: str) -> None:
    writer = ScriptedChatClient(heard_script)

    with orchestrations(hub, writer, ScriptedChatClient(heard_script)) as (run, client):
        output = run("chain", None)
        transcript = client.conversation("writer", output["conversation"]).messages()

    assert {name: output[name] for name in CHAIN_ANSWERS} == CHAIN_ANSWERS
    assert [message.text for message in writer.calls[1]] == [
        "Write a haiku about rain.",
        "heard: Write a haiku about rain.",
        "Make it sadder.",
    ]
    assert texts(transcript) == [
        "Write a haiku about rain.",
        CHAIN_ANSWERS["draft"],
        "Make it sadder.",
        CHAIN_ANSWERS["better"],
    ]


def test_a_person_and_an_orchestration_take_turns_in_one_conversation(hub: str) -> None:
    with orchestrations(hub, ScriptedChatClient(heard_script), ScriptedChatClient(heard_script)) as (run, client):
        person = client.conversation("writer", "support-42")
        person.send("My order number is 1234.")
        output = run("join", {"conversation": "support-42", "message": "What did I say?"})
        later = person.send("And then?")

    assert output == "heard: My order number is 1234. | What did I say?"
    assert later["text"] == "heard: My order number is 1234. | What did I say? | And then?"


def test_fan_out_over_agents_and_sessions_returns_each_answer_in_task_order(hub: str) -> None:
    writer, editor = ScriptedChatClient(heard_script), ScriptedChatClient(heard_script)

    with orchestrations(hub, writer, editor) as (run, _):
        output = run("fan_out", ["rain", "snow", "fog"])

    assert output == fan_out_answers(["rain", "snow", "fog"])
    # Each call was a new conversation: every model call was sent its own message alone.
    assert sorted(len([m for m in call if m.role == "user"]) for call in writer.calls + editor.calls) == [1, 1, 1, 1]


def test_structured_output_gives_an_instance_of_the_model(hub: str) -> None:
    with orchestrations(hub, ScriptedChatClient(heard_script), ScriptedChatClient(heard_script)) as (run, _):
        output = run("review", "Please review: ship it.")

    assert output == {"type": "Verdict", "approved": True, "reason": "read: Please review: ship it."}
