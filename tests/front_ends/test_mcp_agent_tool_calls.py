"""Agents as MCP tools on the in-memory app (`front_doors`): each call is answered by the app's tool function as the
Functions MCP extension answers it, and is an ordinary turn of a conversation: the HTTP API shows it, and history is
recalled across calls. The MCP endpoint itself (sessions, transports, version negotiation) is the local host's
(tests/mcp/).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from apps import build_app, make_agent
from chat_clients import FailingChatClient, ScriptedChatClient
from front_doors import MemoryFunctionApp, call_mcp_tool, memory_app, with_mcp_session
from mcp.shared.exceptions import MCPError
from tool_results import AGENT_SCHEMA, CONVERSATIONS, texts, transcript

from agent_host import HostSettings, OfflineChatClient

Serve = Callable[..., MemoryFunctionApp]


@pytest.fixture
def serve() -> Serve:
    """Build the in-memory app for these agents (`memory_app` arguments)."""
    return memory_app


def test_tools_list_shows_every_enabled_agent_with_its_description_and_schema(serve: Serve) -> None:
    running = serve(
        make_agent(OfflineChatClient(), "support", description="Answers support questions."),
        make_agent(OfflineChatClient(), "billing"),
        enable_mcp_tool_trigger=True,
    )

    listed = with_mcp_session(running, lambda session: session.list_tools())

    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["billing", "support"]
    assert tools["support"].description == "Answers support questions."
    assert tools["billing"].description == "Interact with billing agent"
    assert tools["support"].input_schema == AGENT_SCHEMA
    assert tools["billing"].input_schema == AGENT_SCHEMA


def test_add_agent_decides_per_agent_over_the_apps_setting() -> None:
    def build(app_kwargs: dict[str, Any]) -> Any:
        app = build_app(make_agent(OfflineChatClient(), "default_on"), **app_kwargs)
        app.add_agent(make_agent(OfflineChatClient(), "opted_out"), enable_mcp_tool_trigger=False)
        return app

    app = build({"enable_mcp_tool_trigger": True})
    off_app = build({})
    off_app.add_agent(make_agent(OfflineChatClient(), "opted_in"), enable_mcp_tool_trigger=True)

    assert [tool.name for tool in app.mcp_tools.tools] == ["default_on"]
    assert [tool.name for tool in off_app.mcp_tools.tools] == ["opted_in"]


def test_a_call_without_a_session_id_starts_a_conversation_and_says_how_to_continue_it(serve: Serve) -> None:
    running = serve(make_agent(OfflineChatClient()), enable_mcp_tool_trigger=True)

    first = call_mcp_tool(running, "assistant", {"query": "My name is Grace."})
    session_id = first.structured_content["sessionId"]
    second = call_mcp_tool(running, "assistant", {"query": "What is my name?", "sessionId": session_id})
    other = call_mcp_tool(running, "assistant", {"query": "What is my name?"})

    assert (
        texts(first)[1]
        == f'sessionId: {session_id} (call assistant again with sessionId "{session_id}" to continue this conversation)'
    )
    assert texts(second)[0] == "[offline model] Your name is Grace."
    assert other.structured_content["sessionId"] not in (session_id, None)
    assert "Grace" not in texts(other)[0]
    assert [role for role, _ in transcript(running, session_id)] == ["user", "assistant", "user", "assistant"]


def test_the_legacy_thread_id_argument_continues_a_conversation(serve: Serve) -> None:
    running = serve(make_agent(OfflineChatClient()), enable_mcp_tool_trigger=True)

    call_mcp_tool(running, "assistant", {"query": "My name is Ada.", "threadId": "legacy-1"})
    second = call_mcp_tool(running, "assistant", {"query": "What is my name?", "threadId": "legacy-1"})

    assert (second.structured_content["sessionId"], texts(second)[0]) == (
        "legacy-1",
        "[offline model] Your name is Ada.",
    )


def test_an_unknown_tool_is_the_extensions_protocol_error(serve: Serve) -> None:
    running = serve(make_agent(OfflineChatClient()), enable_mcp_tool_trigger=True)

    with pytest.raises(MCPError) as raised:
        call_mcp_tool(running, "nobody", {"query": "hello"})

    assert (raised.value.code, raised.value.message) == (-32602, "Unknown tool: 'nobody'")


def test_a_missing_query_is_refused_before_any_turn_runs(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)

    with pytest.raises(MCPError) as raised:
        call_mcp_tool(running, "assistant", {"sessionId": "c1"})

    assert raised.value.code == -32602
    assert raised.value.message == "One or more required tool properties are missing values. Please provide: query"
    assert client.calls == []


def test_a_failing_agent_is_a_tool_error_with_the_turns_code_and_message(serve: Serve) -> None:
    running = serve(make_agent(FailingChatClient()), enable_mcp_tool_trigger=True)

    result = call_mcp_tool(running, "assistant", {"query": "hello", "sessionId": "broken"})

    turn_id = result.structured_content["turnId"]
    stored = running.request("GET", f"{CONVERSATIONS.format(agent='assistant')}/broken/turns/{turn_id}").json()
    assert result.is_error is True
    assert result.structured_content["error"] == stored["error"]
    assert stored["error"]["code"] == "turn_failed"
    assert texts(result) == [f"turn_failed: {stored['error']['message']}"]
    assert "secret-detail-123" not in texts(result)[0]


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"query": "  "}, "missing_message"),
        ({"query": 42}, "missing_message"),
        ({"query": "hi", "sessionId": "../other"}, "invalid_conversation_id"),
        ({"query": "hi", "sessionId": 7}, "invalid_conversation_id"),
        ({"query": "hi", "sessionId": "a", "threadId": "b"}, "conflicting_session_id"),
        ({"query": "hi", "idempotencyKey": "has spaces"}, "invalid_idempotency_key"),
        ({"query": "x" * 2000}, "message_too_large"),
    ],
)
def test_unusable_arguments_are_tool_errors_naming_the_problem(serve: Serve, arguments: dict, code: str) -> None:
    client = ScriptedChatClient()
    running = serve(make_agent(client), settings=HostSettings(max_message_bytes=1000), enable_mcp_tool_trigger=True)

    result = call_mcp_tool(running, "assistant", arguments)

    assert result.is_error is True
    assert result.structured_content["error"]["code"] == code
    assert texts(result)[0].startswith(f"{code}: ")
    assert client.calls == []
