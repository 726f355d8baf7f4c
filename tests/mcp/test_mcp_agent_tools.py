"""Agents as MCP tools over the wire, as the official MCP SDK client meets them over Streamable HTTP on either host
(the function app under the local host, the standalone worker's ASGI app): version negotiation and ping, the tool
and its schema, recall across calls, the conversation in the HTTP API, and an unknown tool. The rest of the agents'
tool calls run on the in-memory app (tests/front_ends/test_mcp_agent_tool_calls.py).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agent_framework import Message
from apps import make_agent
from chat_clients import ScriptedChatClient, default_reply
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from mcp_harness import ServeTools, call_tool, serve_tools, with_session
from tool_results import AGENT_SCHEMA, CONVERSATIONS, texts, transcript

from agent_host import OfflineChatClient

__all__ = ["serve_tools"]  # the fixture, imported for pytest


def test_initialize_negotiates_the_extensions_newest_version_and_ping_answers(serve_tools: ServeTools) -> None:
    running = serve_tools(make_agent(OfflineChatClient()))

    async def session_facts(session: ClientSession) -> tuple[Any, ...]:
        pong = await session.send_ping()
        return session.protocol_version, session.server_info, session.server_capabilities, pong

    version, info, capabilities, pong = with_session(running, session_facts)

    # The SDK offers 2025-11-25; the extension's server (C# SDK 0.4) answers an unknown version with its newest.
    assert version == "2025-06-18"
    assert (info.name, info.version) == ("Azure Functions MCP server", "1.0.0")
    assert capabilities.tools is not None and capabilities.resources is None
    assert pong.model_dump(exclude_none=True) == {}


def test_tools_list_shows_each_agent_with_its_description_and_the_agent_tool_schema(serve_tools: ServeTools) -> None:
    running = serve_tools(
        make_agent(OfflineChatClient(), "support", description="Answers support questions."),
        make_agent(OfflineChatClient(), "billing"),
    )

    listed = with_session(running, lambda session: session.list_tools())

    assert [(tool.name, tool.description, tool.input_schema) for tool in listed.tools] == [
        ("support", "Answers support questions.", AGENT_SCHEMA),
        ("billing", "Interact with billing agent", AGENT_SCHEMA),
    ]


def test_two_calls_with_one_session_id_recall_the_first_and_read_back_over_http(serve_tools: ServeTools) -> None:
    running = serve_tools(make_agent(OfflineChatClient()))

    async def two_calls(session: ClientSession) -> list[CallToolResult]:
        first = await session.call_tool("assistant", {"query": "My name is Ada.", "sessionId": "mcp-c1"})
        second = await session.call_tool("assistant", {"query": "What is my name?", "sessionId": "mcp-c1"})
        return [first, second]

    first, second = with_session(running, two_calls)

    assert second.is_error is False
    assert texts(second) == [
        "[offline model] Your name is Ada.",
        'sessionId: mcp-c1 (call assistant again with sessionId "mcp-c1" to continue this conversation)',
    ]
    assert second.structured_content is not None
    assert {key: second.structured_content[key] for key in ("status", "response", "sessionId")} == {
        "status": "completed",
        "response": "[offline model] Your name is Ada.",
        "sessionId": "mcp-c1",
    }
    assert transcript(running, "mcp-c1") == [
        ("user", "My name is Ada."),
        ("assistant", texts(first)[0]),
        ("user", "What is my name?"),
        ("assistant", "[offline model] Your name is Ada."),
    ]
    turn = running.request(
        "GET", f"{CONVERSATIONS.format(agent='assistant')}/mcp-c1/turns/{second.structured_content['turnId']}"
    )
    assert (turn.status, turn.json()["text"]) == (200, "[offline model] Your name is Ada.")


def test_an_unknown_tool_is_the_extensions_protocol_error(serve_tools: ServeTools) -> None:
    running = serve_tools(make_agent(OfflineChatClient()))

    with pytest.raises(MCPError) as raised:
        call_tool(running, "nobody", {"query": "hello"})

    assert (raised.value.code, raised.value.message) == (-32602, "Unknown tool: 'nobody'")


def test_the_turn_an_mcp_call_runs_is_in_flight_for_the_http_apis_if_busy(serve_tools: ServeTools) -> None:
    started, release = threading.Event(), threading.Event()

    def held(messages: list[Message], options: Any) -> Message:
        started.set()
        release.wait(30)
        return default_reply(messages, 1)

    running = serve_tools(make_agent(ScriptedChatClient(held)))
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(call_tool, running, "assistant", {"query": "hello", "sessionId": "c1"})
        try:
            assert started.wait(30)
            busy = running.request(
                "POST", f"{CONVERSATIONS.format(agent='assistant')}/c1/turns", {"message": "again", "ifBusy": "reject"}
            )
        finally:
            release.set()
        result = call.result(60)

    assert busy.status == 409
    assert busy.json()["error"]["code"] == "conversation_busy"
    assert result.structured_content is not None
    assert busy.json()["busyWith"] == result.structured_content["turnId"]
    assert texts(result)[0] == "reply 1: hello"
    assert [text for _, text in transcript(running, "c1")] == ["hello", "reply 1: hello"]
