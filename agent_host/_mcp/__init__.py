"""MCP tools: hosted agents and hosted workflows as tools of the Functions MCP extension's `mcpToolTrigger`.

`tools.py` declares the tools (names, descriptions, properties) in the binding's terms; `arguments.py` reads a call's
arguments; `agent_tool.py` serves a call of an agent's tool as one ordinary conversation turn, `workflow_call.py` a
call of a workflow's tool as a start, read or answer of a run (`workflow_input.py` derives its `input` property);
`results.py` and `workflow_results.py` shape what the tool functions return.

Serving them is `agent_host._mcp_extension`'s (the extension's JSON-RPC server, its Streamable HTTP transport and
a tool's binding), for the local host (`_local_host/mcp_endpoint.py`, with the legacy SSE transport) and the
standalone worker (`worker/_mcp.py`, `worker/_asgi.py`) alike.
"""

from .agent_tool import run_agent_tool
from .tools import McpTool, McpToolRegistry, agent_tool, require_result_schema_support, workflow_tool
from .workflow_call import run_workflow_tool
from .workflow_input import WorkflowInput, workflow_input

__all__ = [
    "McpTool",
    "McpToolRegistry",
    "WorkflowInput",
    "agent_tool",
    "require_result_schema_support",
    "run_agent_tool",
    "run_workflow_tool",
    "workflow_input",
    "workflow_tool",
]
