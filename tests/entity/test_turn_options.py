"""What a `run` operation may ask of a turn besides its text: structured output, no tools, a role, multimodal contents.

Each is checked through the real entity function with the host's batch format, on a model that records exactly what
it was sent, and asserted on the stored state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

import pytest
from agent_framework import Content, Message, tool
from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city", "days"],
    "additionalProperties": False,
}
WRAPPED = {"type": "json_schema", "json_schema": {"name": "response", "schema": SCHEMA}}
PNG = "data:image/png;base64,iVBORw0KGgo="
tool_runs: list[str] = []


@tool
def get_weather(city: Annotated[str, "The city."]) -> str:
    """Today's weather (canned)."""
    tool_runs.append(city)
    return f"sunny in {city}"


class Answering:
    """A script that answers every call with the same message, keeping the options each call was sent."""

    def __init__(self, *contents: Any) -> None:
        self.contents = list(contents)
        self.options: list[Mapping[str, Any]] = []

    def __call__(self, messages: list[Message], options: Mapping[str, Any]) -> Message:
        self.options.append(options)
        return Message("assistant", self.contents)


def answering(text: str) -> Answering:
    return Answering(text)


def run(driver: Any, operation: dict[str, Any]) -> dict[str, Any]:
    (result,) = driver.send(("run", {"turnId": "t1", "message": "Plan my trip.", **operation}))
    assert not result["isError"], result
    return driver.decoded()


def test_a_matching_answer_is_recorded_as_structured_output_and_the_schema_reaches_the_model() -> None:
    script = answering('{"city": "Oslo", "days": 3}')
    driver = driver_for(build_app(make_agent(ScriptedChatClient(script))), "assistant")

    state = run(driver, {"responseFormat": SCHEMA})

    assert state["turns"]["t1"]["status"] == "completed"
    assert state["turns"]["t1"]["structured"] is True
    assert [options.get("response_format") for options in script.options] == [WRAPPED]


def test_an_answer_that_does_not_match_fails_the_turn_and_stays_in_the_history() -> None:
    driver = driver_for(
        build_app(make_agent(ScriptedChatClient(answering('{"city": "Oslo", "days": 0}')))), "assistant"
    )

    state = run(driver, {"responseFormat": SCHEMA})

    record = state["turns"]["t1"]
    assert record["status"] == "failed"
    assert record["error"]["code"] == "invalid_structured_output"
    assert record["error"]["message"].startswith(
        "The answer does not match the requested responseFormat: days: 0 is less than the minimum of 1."
    )
    assert [message["text"] for message in state["messages"]] == ["Plan my trip.", '{"city": "Oslo", "days": 0}']


def test_an_answer_that_is_not_json_fails_the_turn_naming_the_answer() -> None:
    driver = driver_for(build_app(make_agent(ScriptedChatClient(answering("Oslo, three days")))), "assistant")

    record = run(driver, {"responseFormat": WRAPPED})["turns"]["t1"]

    assert record["error"]["code"] == "invalid_structured_output"
    assert "the answer is not JSON" in record["error"]["message"] and "'Oslo, three days'" in record["error"]["message"]


def test_an_invalid_schema_is_refused_before_anything_runs() -> None:
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client)), "assistant")

    (result,) = driver.send(("run", {"turnId": "t1", "message": "hi", "responseFormat": {"type": "objekt"}}))

    assert result["isError"] and "is not a valid JSON schema" in json.dumps(result)
    assert client.calls == [] and driver.state is None


def test_a_turn_without_tools_sends_no_tools_and_runs_none() -> None:
    # A model that calls the tool whatever it is told: without tools, there is nothing to call.
    tool_runs.clear()
    script = Answering(Content.from_function_call("c1", "get_weather", arguments='{"city": "Oslo"}'))
    agent = make_agent(ScriptedChatClient(script), tools=[get_weather])
    driver = driver_for(build_app(agent), "assistant")

    state = run(driver, {"enableToolCalls": False})

    assert [(options.get("tools"), options.get("tool_choice")) for options in script.options] == [(None, "none")]
    assert tool_runs == []
    assert state["turns"]["t1"]["status"] == "completed"
    assert agent.default_options["tools"] == [get_weather]  # the caller's agent is untouched


def test_the_same_agent_calls_its_tool_when_tools_are_on() -> None:
    tool_runs.clear()
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client, tools=[get_weather])), "assistant")

    (result,) = driver.send(("run", {"turnId": "t1", "message": 'call get_weather {"city": "Oslo"}'}))

    assert not result["isError"]
    assert tool_runs == ["Oslo"]


@pytest.mark.parametrize("role", ["system", "assistant"])
def test_the_message_is_stored_and_sent_in_its_role(role: str) -> None:
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client)), "assistant")

    state = run(driver, {"role": role, "message": "Answer in French."})

    assert [(m["role"], m["text"]) for m in state["messages"][:1]] == [(role, "Answer in French.")]
    assert (client.calls[0][-1].role, client.calls[0][-1].text) == (role, "Answer in French.")


def test_contents_are_the_message_with_their_images_stored_as_sent() -> None:
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client)), "assistant")
    contents = [
        {"type": "text", "text": "What is in these pictures?"},
        {"type": "uri", "uri": "https://example.com/cat.png", "media_type": "image/png"},
        {"type": "data", "uri": PNG, "media_type": "image/png"},
    ]

    (result,) = driver.send(("run", {"turnId": "t1", "contents": contents}))

    stored = driver.decoded()["messages"][0]
    assert not result["isError"]
    assert [(c["type"], c.get("uri")) for c in stored["contents"]] == [
        ("text", None),
        ("uri", "https://example.com/cat.png"),
        ("data", PNG),
    ]
    assert [content.type for content in client.calls[0][-1].contents] == ["text", "uri", "data"]
