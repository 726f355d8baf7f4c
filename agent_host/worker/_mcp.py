"""The worker's MCP tools: each agent's tool as the function app declares it, a call served by the function app's own
`run_agent_tool` on the worker's conversation client, and its result read as the Functions MCP extension reads it.

Knows the tool declarations and the seam; the JSON-RPC server and the transport are `_mcp/`'s, shared with the
local host.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._clock import Clock
from .._contract import AgentRoute
from .._conversation_client.client import ConversationClient
from .._conversation_client.in_flight import TurnsInFlight
from .._mcp.agent_tool import run_agent_tool
from .._mcp.tools import McpTool, binding_of
from .._mcp_extension.protocol import McpServer
from .._mcp_extension.tool_binding import ToolBinding
from .._settings import HostSettings


@dataclass
class WorkerAgentTool(ToolBinding):
    """An agent's tool on the worker: the binding the function app declares for it, served as one turn.

    Attributes:
        function_name: The function that serves the tool on Functions (`mcptool_<agent>`), for the log.
        agent: The agent, as the routes know it.
        conversations: The agent's conversations.
        settings: The worker's settings (message size, how long a call waits).
        clock: The worker's clock.
        in_flight: Where the call's turn is listed while it is in flight, as every front door's is.
    """

    function_name: str
    agent: AgentRoute
    conversations: ConversationClient
    settings: HostSettings
    clock: Clock
    in_flight: TurnsInFlight

    async def call(self, context: dict[str, Any]) -> dict[str, Any]:
        """Take the call's turn and return its `CallToolResult`; as on Functions, a call waits up to
        `max_wait_seconds` (MCP has no 202)."""
        returned = await run_agent_tool(
            json.dumps(context),
            self.conversations,
            self.agent,
            self.settings,
            self.clock,
            self.settings.max_wait_seconds,
            self.in_flight,
        )
        return self.result(returned)


def agent_tool_server(
    tools: list[McpTool],
    agents: Mapping[str, AgentRoute],
    conversations: Mapping[str, ConversationClient],
    settings: HostSettings,
    clock: Clock,
    in_flight: TurnsInFlight,
) -> McpServer:
    """The MCP server of the worker's agent tools.

    Args:
        tools: The declared tools (`AgentWorker.mcp_tools`), each named after its agent.
        agents: The agents by name.
        conversations: Each agent's conversations, by name.
        settings: The worker's settings.
        clock: The worker's clock.
        in_flight: The turns in flight of the worker's turn stream store.
    """
    return McpServer(
        [
            WorkerAgentTool(
                **binding_of(tool),
                function_name=tool.function_name,
                agent=agents[tool.name],
                conversations=conversations[tool.name],
                settings=settings,
                clock=clock,
                in_flight=in_flight,
            )
            for tool in tools
        ]
    )
