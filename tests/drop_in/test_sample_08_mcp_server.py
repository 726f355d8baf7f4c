"""Sample 08 (MCP server) of agent-framework-azurefunctions, as our own app (`drop_in_agents.mcp_app`).

Agents over HTTP only, as MCP tools only, or both: health reports which, a hidden agent's routes answer 404, and the
official MCP client lists and calls the tools and continues a conversation by `sessionId`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp.types as types
from drop_in_agents import mcp_app
from drop_in_hosts import module_host
from hosting import RunningHost
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

advisors = module_host(mcp_app)


def with_mcp(host: RunningHost, calls: list[tuple[str, dict[str, Any]]]) -> tuple[types.ListToolsResult, list[Any]]:
    """The tools the host's MCP endpoint lists, and the results of these calls, through the official MCP client."""
    assert host.host is not None
    endpoint = f"{host.host.base_url}/runtime/webhooks/mcp"

    async def session() -> tuple[types.ListToolsResult, list[Any]]:
        async with streamable_http_client(endpoint) as (read, write, *_), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return listed, results

    return asyncio.run(session())


def test_08_health_reports_each_agents_http_and_mcp_switches(advisors: RunningHost) -> None:
    agents = advisors.request("GET", "/api/health").json()["agents"]

    assert {agent["name"]: (agent["http_endpoint_enabled"], agent["mcp_tool_enabled"]) for agent in agents} == {
        "Joker": (True, False),
        "StockAdvisor": (False, True),
        "PlantAdvisor": (True, True),
    }


def test_08_an_agent_without_http_routes_answers_404_on_every_agent_route(advisors: RunningHost) -> None:
    hidden = [
        advisors.request("POST", "/api/agents/StockAdvisor/run", {"message": "AAPL?"}),
        advisors.request("POST", "/api/agents/StockAdvisor/conversations/c1/turns", {"message": "AAPL?"}),
        advisors.request("GET", "/api/agents/StockAdvisor/conversations"),
    ]
    shown = advisors.request("POST", "/api/agents/PlantAdvisor/run", {"message": "A plant for shade?"})

    assert [reply.status for reply in hidden] == [404, 404, 404]
    assert {reply.json()["error"]["code"] for reply in hidden} == {"agent_not_found"}
    assert "StockAdvisor" not in hidden[0].json()["error"]["message"].split("agents: ", 1)[-1]
    assert shown.status == 200


def test_08_mcp_lists_and_answers_the_mcp_agents_only(advisors: RunningHost) -> None:
    listed, (stock, plant) = with_mcp(
        advisors, [("StockAdvisor", {"query": "How is AAPL doing?"}), ("PlantAdvisor", {"query": "A shade plant?"})]
    )

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"StockAdvisor", "PlantAdvisor"}
    assert tools["PlantAdvisor"].description == "Get plant recommendations."
    assert tools["StockAdvisor"].description == "Interact with StockAdvisor agent"
    assert stock.is_error is False and plant.is_error is False
    assert (
        stock.content[0].text
        == '[offline model] You said: "How is AAPL doing?". (0 earlier messages in this conversation.)'
    )


def test_08_a_session_id_continues_the_conversation_over_mcp(advisors: RunningHost) -> None:
    _, (_, recalled) = with_mcp(
        advisors,
        [
            ("PlantAdvisor", {"query": "My balcony is north facing.", "sessionId": "balcony-1"}),
            ("PlantAdvisor", {"query": "What is my balcony?", "sessionId": "balcony-1"}),
        ],
    )

    assert recalled.content[0].text == "[offline model] Your balcony is north facing."
