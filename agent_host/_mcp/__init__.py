"""MCP tools: hosted agents as tools of the Functions MCP extension's `mcpToolTrigger`.

`tools.py` declares the tools (names, descriptions, properties) in the binding's terms; `agent_tool.py` serves a call
of an agent's tool as one ordinary conversation turn; `results.py` shapes what the tool function returns. Hosted
workflows are not tools yet: the registry is where their kind of tool will be added.
"""

from .agent_tool import run_agent_tool
from .tools import McpTool, McpToolRegistry, agent_tool, require_result_schema_support

__all__ = ["McpTool", "McpToolRegistry", "agent_tool", "require_result_schema_support", "run_agent_tool"]
