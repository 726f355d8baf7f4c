"""Per-user conversations (`conversation_owners`) on what only the function app serves, the inspector and MCP, through
the real triggers on the local host: another principal meets exactly the 404 of a conversation that does not exist
and changes nothing, and the owner reaches its own. The HTTP API's routes run on both hosts
(tests/security/test_conversation_owners_http.py); an MCP call naming nobody runs on the in-memory app
(tests/front_ends/test_owner_checks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apps import build_app, make_agent
from hosting import RunningHost
from mcp_harness import ServeTools, call_tool, serve_tools
from principals import ADMIN_KEY, ALICE, BOB, C1, snapshot, started
from tool_results import texts

from agent_host import ConversationNotFoundError, OfflineChatClient

__all__ = ["serve_tools"]  # the fixture, imported for pytest

INSPECTED_C1 = "/api/inspector/agents/assistant/conversations/c1"
TOOL_CALL = {"query": "What is my name?", "sessionId": "c1"}


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningHost]:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)

    def app() -> Any:
        agent = make_agent(OfflineChatClient())
        return build_app(agent, conversation_owners=True, enable_mcp_tool_trigger=True, inspector=True)

    running = RunningHost(app, tmp_path)
    yield running
    running.stop()


def test_another_principal_meets_the_404_of_a_missing_conversation_in_the_inspector_and_mcp(
    host: RunningHost,
) -> None:
    started(host)
    before = snapshot(host)

    inspected = host.request("GET", INSPECTED_C1, headers=BOB)
    tool = call_tool(host, "assistant", TOOL_CALL, headers=BOB)
    host.wait_idle()

    assert inspected.status == 404
    assert inspected.json() == ConversationNotFoundError("assistant", "c1").body()
    assert tool.is_error
    assert tool.structured_content["error"]["code"] == "conversation_not_found"
    assert snapshot(host) == before


def test_the_owner_reaches_its_conversation_in_the_inspector_and_mcp(host: RunningHost) -> None:
    started(host)

    inspected = host.request("GET", INSPECTED_C1, headers=ALICE)
    tool = call_tool(host, "assistant", TOOL_CALL, headers=ALICE)

    assert inspected.status == 200, inspected.body
    assert not tool.is_error and "Ada" in texts(tool)[0]


def test_an_mcp_call_reaches_only_the_callers_own_conversation_on_both_hosts(serve_tools: ServeTools) -> None:
    running = serve_tools(make_agent(OfflineChatClient()), conversation_owners=True)
    call_tool(running, "assistant", {"query": "My name is Ada.", "sessionId": "c1"}, headers=ALICE)

    other = call_tool(running, "assistant", {"query": "What is my name?", "sessionId": "c1"}, headers=BOB)
    nobody = call_tool(running, "assistant", {"query": "What is my name?", "sessionId": "c1"})
    own = call_tool(running, "assistant", {"query": "What is my name?", "sessionId": "c1"}, headers=ALICE)

    assert other.is_error is True and other.structured_content is not None
    assert other.structured_content["error"] == ConversationNotFoundError("assistant", "c1").to_record()
    assert nobody.is_error is True and nobody.structured_content is not None
    assert nobody.structured_content["error"]["code"] == "unauthenticated"
    assert (own.is_error, texts(own)[0]) == (False, "[offline model] Your name is Ada.")
    reply = running.request("GET", f"{C1}/messages", headers=ALICE)
    assert [message["text"] for message in reply.json()["messages"]][::2] == ["My name is Ada.", "What is my name?"]
