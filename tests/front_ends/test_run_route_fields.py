"""The `/run` route's fields that agent-framework-azurefunctions 1.0.0b260922 takes but does not honour over HTTP:
`response_format` (a JSON schema; that host answers 500) and `enable_tool_calls: false` (that host still sends and
runs the tools), and `role`. Here each does what it says, on a model that records what it was sent."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from agent_framework import Content, Message, tool
from apps import make_agent
from chat_clients import EchoScript, ScriptedChatClient
from front_doors import MemoryFunctionApp, memory_app

NOTE = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
refunds: list[str] = []


@tool
def refund(order_id: Annotated[str, "The order."]) -> str:
    """Refund an order."""
    refunds.append(order_id)
    return f"refunded {order_id}"


class Model(EchoScript):
    """The echoing script, calling `refund` when asked to and saying what the tool answered."""

    def reply(self, messages: list[Message]) -> Message:
        last = messages[-1]
        if last.role == "tool":
            return Message("assistant", [f"done: {last.contents[0].result}"])
        if "refund" in (last.text or ""):
            return Message("assistant", [Content.from_function_call("r1", "refund", arguments='{"order_id": "A-7"}')])
        return super().reply(messages)


MODEL = Model()


@pytest.fixture(scope="module")
def host() -> MemoryFunctionApp:
    return memory_app(make_agent(ScriptedChatClient(MODEL), tools=[refund]))


def run(host: MemoryFunctionApp, body: dict[str, Any]) -> Any:
    return host.request("POST", "/api/agents/assistant/run", body)


def test_response_format_gives_the_parsed_value_beside_the_text(host: MemoryFunctionApp) -> None:
    MODEL.next_answer = '{"title": "Groceries"}'

    reply = run(host, {"message": "Name this list.", "session_id": "rf-1", "response_format": NOTE})

    assert reply.status == 200
    assert (reply.json()["response"], reply.json()["value"]) == ('{"title": "Groceries"}', {"title": "Groceries"})
    assert MODEL.sent[-1][1]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": NOTE},
    }


def test_an_answer_not_matching_the_response_format_is_a_failed_turn(host: MemoryFunctionApp) -> None:
    MODEL.next_answer = '{"name": "Groceries"}'

    reply = run(host, {"message": "Name this list.", "session_id": "rf-2", "responseFormat": NOTE})

    assert reply.status == 502
    assert reply.json()["status"] == "failed"
    assert reply.json()["error"]["code"] == "invalid_structured_output"
    assert "'title' is a required property" in reply.json()["error"]["message"]


def test_an_invalid_response_format_is_400_before_anything_runs(host: MemoryFunctionApp) -> None:
    calls = len(MODEL.sent)

    reply = run(host, {"message": "Name this list.", "session_id": "rf-3", "response_format": {"type": "list"}})

    assert (reply.status, reply.json()["error"]["code"]) == (400, "invalid_response_format")
    assert len(MODEL.sent) == calls


def test_enable_tool_calls_false_runs_the_turn_without_tools(host: MemoryFunctionApp) -> None:
    refunds.clear()

    off = run(host, {"message": "Please refund my order.", "session_id": "tools-1", "enable_tool_calls": False})
    sent_without = MODEL.sent[-1][1]
    on = run(host, {"message": "Please refund my order.", "session_id": "tools-2"})

    assert off.status == 200 and sent_without.get("tools") is None and sent_without["tool_choice"] == "none"
    assert on.json()["response"] == "done: refunded A-7"
    assert refunds == ["A-7"]  # only the turn with tools ran the tool


def test_a_system_role_message_is_stored_and_replayed_as_system(host: MemoryFunctionApp) -> None:
    run(host, {"message": "Answer in French.", "session_id": "role-1", "role": "system"})
    run(host, {"message": "Hello.", "session_id": "role-1"})

    messages = host.request("GET", "/api/agents/assistant/conversations/role-1/messages").json()["messages"]
    replayed = MODEL.sent[-1][0]
    assert [(m["role"], m["text"]) for m in messages][:2] == [
        ("system", "Answer in French."),
        ("assistant", "echo: Answer in French."),
    ]
    assert ("system", "Answer in French.") in [(m.role, m.text) for m in replayed]
