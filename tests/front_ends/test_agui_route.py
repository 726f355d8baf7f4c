"""The AG-UI front door (`POST /api/agents/{agent}/agui`) driven by Agent Framework's own AG-UI client against the
in-memory app (`front_doors`): runs on one thread recall each other, events arrive in AG-UI's order, approvals
round-trip through interrupts, and requests that cannot run are refused as JSON before any stream starts."""

from __future__ import annotations

import asyncio
import json
from itertools import groupby
from typing import Any

import httpx
import pytest
from ag_ui.core import Event
from agent_framework import Agent, Message, tool
from agent_framework_ag_ui import AGUIChatClient
from approval_tools import executed, refund
from apps import make_agent
from chat_clients import FailingChatClient, StreamingChatClient, recall_reply
from front_doors import BASE_URL, MemoryFunctionApp, memory_app
from pydantic import TypeAdapter

KEY = "agui-key"
AGUI = "/api/agents/assistant/agui"
KEYED = {"x-functions-key": KEY}
AGUI_EVENT: TypeAdapter[Any] = TypeAdapter(Event)


@tool
def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"Order {order_id} shipped."


@pytest.fixture
def host() -> MemoryFunctionApp:
    return memory_app(make_agent(StreamingChatClient(recall_reply)))


@pytest.fixture
def tool_host() -> MemoryFunctionApp:
    executed.clear()
    agents = (make_agent(StreamingChatClient(), tools=[refund, lookup]), make_agent(FailingChatClient(), "broken"))
    return memory_app(*agents)


def keyed_client(running: MemoryFunctionApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"x-functions-key": KEY}, timeout=60, transport=running.transport())


def agui_endpoint(running: MemoryFunctionApp) -> str:
    return BASE_URL + AGUI


async def ask(running: MemoryFunctionApp, thread: str, *texts: str, **options: Any) -> list[Any]:
    """Each text as one run of `thread` through AGUIChatClient; the responses."""
    async with keyed_client(running) as http:
        client = AGUIChatClient(endpoint=agui_endpoint(running), http_client=http)
        responses = []
        for text in texts:
            messages = [Message("user", [text])] if text else []
            responses.append(
                await client.get_response(messages, options={"metadata": {"thread_id": thread}, **options})
            )
        return responses


def host_turn(running: MemoryFunctionApp, location: str) -> Any:
    """The turn a run's `Location` names, read through the turns API."""
    assert "/api/agents/" in location and "/turns/" in location
    return running.request("GET", "/api" + location.split("/api", 1)[1], headers={"x-functions-key": KEY}).json()


def raw_events(running: MemoryFunctionApp, body: dict[str, Any]) -> list[dict[str, Any]]:
    reply = running.request("POST", AGUI, body, headers={"x-functions-key": KEY, "Accept": "text/event-stream"})
    assert reply.status == 200, reply.body
    return agui_events(reply.body)


def agui_events(body: bytes) -> list[dict[str, Any]]:
    """The events of an AG-UI stream, each checked against the protocol's own event models."""
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    for event in events:
        AGUI_EVENT.validate_python(event)
    return events


def test_two_runs_on_one_thread_recall_each_other(host: MemoryFunctionApp) -> None:
    first, second = asyncio.run(ask(host, "thread-1", "My name is Ada.", "What is my name?"))

    assert first.text == "Noted: My name is Ada."
    assert second.text == "Your name is Ada."
    assert second.additional_properties["thread_id"] == "thread-1"


def test_a_streamed_run_sends_agui_events_in_order(host: MemoryFunctionApp) -> None:
    body = {"threadId": "t2", "runId": "run-a", "messages": [{"id": "u1", "role": "user", "content": "Hi there"}]}

    events = raw_events(host, body)

    types = [event["type"] for event in events]
    # The entity coalesces deltas (at most one write per interval): how many pieces arrive depends on timing.
    assert [kind for kind, _ in groupby(types)] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "t2", "runId": "run-a"}
    assert "".join(event["delta"] for event in events if event["type"] == "TEXT_MESSAGE_CONTENT") == "Noted: Hi there"
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "t2", "runId": "run-a"}


def test_the_conversation_reads_back_both_runs_and_only_new_messages_are_input(host: MemoryFunctionApp) -> None:
    history = [{"id": "u1", "role": "user", "content": "My name is Ada."}]
    first = raw_events(host, {"threadId": "t3", "runId": "r1", "messages": history})
    answer_id = next(event["messageId"] for event in first if event["type"] == "TEXT_MESSAGE_START")
    # The whole history again, as a stateless front end sends it: only the last message is new.
    history += [
        {"id": answer_id, "role": "assistant", "content": "Noted: My name is Ada."},
        {"id": "u2", "role": "user", "content": "What is my name?"},
    ]
    raw_events(host, {"threadId": "t3", "runId": "r2", "messages": history})

    messages = host.request("GET", "/api/agents/assistant/conversations/t3/messages", headers={"x-functions-key": KEY})
    assert [(m["role"], m["text"]) for m in messages.json()["messages"]] == [
        ("user", "My name is Ada."),
        ("assistant", "Noted: My name is Ada."),
        ("user", "What is my name?"),
        ("assistant", "Your name is Ada."),
    ]


def test_a_retried_run_id_runs_the_turn_once(host: MemoryFunctionApp) -> None:
    body = {"threadId": "t4", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "Hello"}]}

    first = raw_events(host, body)
    again = raw_events(host, body)

    messages = host.request("GET", "/api/agents/assistant/conversations/t4/messages", headers={"x-functions-key": KEY})
    assert len(messages.json()["messages"]) == 2
    assert [e["type"] for e in again] == [e["type"] for e in first]


def test_an_approval_round_trips_through_interrupts(tool_host: MemoryFunctionApp) -> None:
    async def both() -> tuple[Any, Any]:
        (asked,) = await ask(tool_host, "t5", 'call refund {"order_id": "A17"}')
        interrupt = asked.additional_properties["interrupts"][0]
        resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
        (answered,) = await ask(tool_host, "t5", "", resume=resume)
        return asked, answered

    asked, answered = asyncio.run(both())

    interrupt = asked.additional_properties["interrupts"][0]
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == "call-1"
    assert interrupt["metadata"]["agent_framework"]["function_call"]["name"] == "refund"
    assert executed == ["A17"]
    assert answered.text == "tool said Refunded A17."


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"runId": "r1", "messages": []}, 400, "invalid_body"),
        (
            {"threadId": "bad id!", "runId": "r1", "messages": [{"role": "user", "content": "hi"}]},
            400,
            "invalid_conversation_id",
        ),
        ({"threadId": "t6", "runId": "r 1", "messages": [{"role": "user", "content": "hi"}]}, 400, "invalid_run_id"),
        ({"threadId": "t6", "runId": "r1", "messages": []}, 400, "missing_message"),
        (
            {"threadId": "t6", "runId": "r1", "messages": [{"role": "tool", "toolCallId": "x", "content": "{}"}]},
            400,
            "invalid_body",
        ),
        (
            {"threadId": "t6", "runId": "r1", "messages": [{"role": "user", "content": "x" * 40_000}]},
            413,
            "message_too_large",
        ),
        (
            {"threadId": "t6", "runId": "r1", "messages": [], "resume": [{"interruptId": "nope"}]},
            400,
            "unknown_approval",
        ),
    ],
)
def test_a_run_that_cannot_start_is_refused_as_json(host: MemoryFunctionApp, body: Any, status: int, code: str) -> None:
    reply = host.request("POST", AGUI, body, headers={"x-functions-key": KEY})

    assert reply.status == status
    assert reply.json()["error"]["code"] == code


def test_an_unknown_agent_is_404(host: MemoryFunctionApp) -> None:
    body = {"threadId": "t7", "runId": "r1", "messages": [{"role": "user", "content": "hi"}]}

    reply = host.request("POST", "/api/agents/nobody/agui", body, headers={"x-functions-key": KEY})

    assert reply.status == 404
    assert reply.json()["error"]["code"] == "agent_not_found"


def test_an_approval_run_ends_in_an_interrupt_and_its_resume_runs_the_tool(tool_host: MemoryFunctionApp) -> None:
    ask_refund = {"id": "u1", "role": "user", "content": 'call refund {"order_id": "B2"}'}

    asked = raw_events(tool_host, {"threadId": "t8", "runId": "r1", "messages": [ask_refund]})
    interrupt = asked[-1]["outcome"]["interrupts"][0]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    answered = raw_events(tool_host, {"threadId": "t8", "runId": "r2", "messages": [ask_refund], "resume": resume})

    assert [e["type"] for e in asked] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "CUSTOM",
        "RUN_FINISHED",
    ]
    assert asked[4]["value"] == {
        "id": interrupt["id"],
        "function_call": {"call_id": "call-1", "name": "refund", "arguments": {"order_id": "B2"}},
    }
    assert [kind for kind, _ in groupby(e["type"] for e in answered)] == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert answered[1]["toolCallId"] == "call-1" and answered[1]["content"] == "Refunded B2."
    assert executed == ["B2"]


def test_a_cancelled_interrupt_rejects_the_tool(tool_host: MemoryFunctionApp) -> None:
    ask_refund = {"id": "u1", "role": "user", "content": 'call refund {"order_id": "C3"}'}
    asked = raw_events(tool_host, {"threadId": "t9", "runId": "r1", "messages": [ask_refund]})
    resume = [{"interruptId": asked[-1]["outcome"]["interrupts"][0]["id"], "status": "cancelled"}]

    raw_events(tool_host, {"threadId": "t9", "runId": "r2", "messages": [ask_refund], "resume": resume})

    conversation = tool_host.request("GET", "/api/agents/assistant/conversations/t9", headers={"x-functions-key": KEY})
    assert executed == []
    assert conversation.json()["pendingApprovals"] == []


def test_an_agent_on_the_agui_client_sends_its_whole_history_and_only_the_new_message_is_stored(
    host: MemoryFunctionApp,
) -> None:
    async def two_runs() -> list[str]:
        async with keyed_client(host) as http:
            front = Agent(AGUIChatClient(endpoint=agui_endpoint(host), http_client=http), name="front")
            session = front.create_session()
            options = {"metadata": {"thread_id": "t10"}}
            first = await front.run("My name is Ada.", session=session, options=options)
            second = await front.run("What is my name?", session=session, options=options)
            return [first.text, second.text]

    answers = asyncio.run(two_runs())

    messages = host.request("GET", "/api/agents/assistant/conversations/t10/messages", headers={"x-functions-key": KEY})
    assert answers == ["Noted: My name is Ada.", "Your name is Ada."]
    assert [m["text"] for m in messages.json()["messages"]] == [
        "My name is Ada.",
        "Noted: My name is Ada.",
        "What is my name?",
        "Your name is Ada.",
    ]


def test_a_tool_run_sends_the_call_and_its_result(tool_host: MemoryFunctionApp) -> None:
    ask_lookup = {"id": "u1", "role": "user", "content": 'call lookup {"order_id": "D4"}'}

    events = raw_events(tool_host, {"threadId": "t11", "runId": "r1", "messages": [ask_lookup]})

    assert [kind for kind, _ in groupby(e["type"] for e in events)] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[1] == {"type": "TOOL_CALL_START", "toolCallId": "call-1", "toolCallName": "lookup"}
    assert json.loads(events[2]["delta"]) == {"order_id": "D4"}
    assert events[4]["content"] == "Order D4 shipped."


def test_a_failed_turn_ends_the_run_with_run_error(tool_host: MemoryFunctionApp) -> None:
    body = {"threadId": "t12", "runId": "r1", "messages": [{"role": "user", "content": "hi"}]}
    reply = tool_host.request("POST", "/api/agents/broken/agui", body, headers={"x-functions-key": KEY})

    events = agui_events(reply.body)

    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[1]["code"] == "turn_failed" and "secret-detail" not in events[1]["message"]
    turn = host_turn(tool_host, reply.headers["location"])
    assert turn["status"] == "failed" and turn["error"]["code"] == "turn_failed"


def test_a_tool_message_for_the_pending_call_answers_its_approval(tool_host: MemoryFunctionApp) -> None:
    ask_refund = {"id": "u1", "role": "user", "content": 'call refund {"order_id": "E5"}'}
    asked = raw_events(tool_host, {"threadId": "t13", "runId": "r1", "messages": [ask_refund]})
    call_id = asked[-1]["outcome"]["interrupts"][0]["toolCallId"]
    # The history as an AG-UI front end keeps it: the call under an id of its own, then the answer to it.
    call = {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": '{"order_id": "E5"}'}}
    called = {"id": "front-1", "role": "assistant", "content": "", "toolCalls": [call | {"id": call_id}]}
    answer = {"id": "a1", "role": "tool", "toolCallId": call_id, "content": '{"approved": true}'}

    answered = raw_events(tool_host, {"threadId": "t13", "runId": "r2", "messages": [ask_refund, called, answer]})

    messages = tool_host.request("GET", "/api/agents/assistant/conversations/t13/messages", headers=KEYED).json()
    assert executed == ["E5"]
    assert [m["text"] for m in messages["messages"] if m["role"] == "user" and m["text"]] == [ask_refund["content"]]
    assert next(e for e in answered if e["type"] == "TOOL_CALL_RESULT")["content"] == "Refunded E5."
