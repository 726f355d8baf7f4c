"""Per-user conversations (`conversation_owners`) through MCP on the in-memory app (`front_doors`): an agent's tool
called with no principal is 401, and nothing is created. The HTTP API's owner checks run on both hosts of the HTTP
API (tests/security/test_conversation_owners_http.py); the inspector and MCP sweeps on the local host
(tests/mcp/test_conversation_owners.py)."""

from __future__ import annotations

import pytest
from apps import make_agent
from front_doors import MemoryFunctionApp, call_mcp_tool, memory_app
from principals import ADMIN_KEY, C1, admin

from agent_host import OfflineChatClient


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> MemoryFunctionApp:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)
    agent = make_agent(OfflineChatClient())
    return memory_app(agent, conversation_owners=True, enable_mcp_tool_trigger=True, inspector=True)


@pytest.mark.parametrize("headers", [{}, {"x-functions-key": "not-the-admin-key"}], ids=["nothing", "function-key"])
def test_an_mcp_call_naming_no_principal_is_401(host: MemoryFunctionApp, headers: dict[str, str]) -> None:
    tool = call_mcp_tool(host, "assistant", {"query": "Hi", "sessionId": "c1"}, headers=headers)

    assert tool.is_error and tool.structured_content["error"]["code"] == "unauthenticated"
    assert host.request("GET", C1, headers=admin(host)).status == 404  # nothing was created
