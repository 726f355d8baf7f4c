"""The MCP tools an app exposes: their names, descriptions and properties, as the `mcpToolTrigger` binding takes them.

One registry holds every tool of an app, so names stay unique across kinds: agent tools and hosted workflow tools.
Knows the binding's fields, not how a call runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import azure.functions as func

# What a tool runs when called: a turn of an agent's conversation, or a run of a hosted workflow.
ToolTarget = Literal["agent", "workflow"]

# Tool functions get names no route or entity function can take: routes are `api_*`, entities `conversation_*`.
FUNCTION_PREFIX = "mcptool_"
QUERY_PROPERTY = "query"
SESSION_ID_PROPERTY = "sessionId"
LEGACY_THREAD_ID_PROPERTY = "threadId"
IDEMPOTENCY_KEY_PROPERTY = "idempotencyKey"
INPUT_PROPERTY = "input"
RUN_ID_PROPERTY = "runId"
REQUEST_ID_PROPERTY = "requestId"
RESPONSE_PROPERTY = "response"
# azure-functions writes `useResultSchema` into the binding from 1.26 on; older versions drop the argument without a
# word, and the extension would then show clients our result envelope as plain text instead of a (failed) result.
MIN_AZURE_FUNCTIONS = (1, 26)


@dataclass(frozen=True)
class ToolProperty:
    """One argument of a tool, in the binding's `toolProperties` format."""

    name: str
    type: str
    description: str
    required: bool = False
    is_array: bool = False

    def to_binding(self) -> dict[str, Any]:
        """The property as one entry of the binding's `toolProperties` JSON array."""
        return {
            "propertyName": self.name,
            "propertyType": self.type,
            "description": self.description,
            "isRequired": self.required,
            "isArray": self.is_array,
        }


@dataclass(frozen=True)
class McpTool:
    """A tool clients see in `tools/list`, and the function that serves it.

    Attributes:
        name: The tool name clients call (an agent's or a workflow's name).
        description: What the tool does, shown to clients and their models.
        properties: The tool's arguments.
        target: What a call runs.
        function_name: The Functions function whose `mcpToolTrigger` serves the tool.
    """

    name: str
    description: str
    properties: tuple[ToolProperty, ...]
    target: ToolTarget
    function_name: str

    def trigger_arguments(self) -> dict[str, Any]:
        """The arguments of `FunctionApp.mcp_tool_trigger` that declare this tool.

        `use_result_schema` makes the extension take our return value as a whole tool result (content, structured
        content and `isError`) instead of wrapping it as text: a failed turn must reach the caller as a tool error.
        """
        return {
            "arg_name": "context",
            "tool_name": self.name,
            "description": self.description,
            "tool_properties": json.dumps([prop.to_binding() for prop in self.properties]),
            "data_type": func.DataType.UNDEFINED,
            "use_result_schema": True,
        }


AGENT_TOOL_PROPERTIES = (
    ToolProperty(QUERY_PROPERTY, "string", "The message to send to the agent.", required=True),
    ToolProperty(
        SESSION_ID_PROPERTY,
        "string",
        "The conversation to continue: the sessionId an earlier call returned. Omit it to start a new conversation.",
    ),
    ToolProperty(
        IDEMPOTENCY_KEY_PROPERTY,
        "string",
        "Optional: a unique key for this call (a UUID works). Calling again with the same key returns the first "
        "call's answer instead of running the agent again; reuse it only to retry this call.",
    ),
)


def agent_tool(agent_name: str, description: str | None) -> McpTool:
    """The tool of a hosted agent: named after it, described by its description, taking a query and a session."""
    return McpTool(
        name=agent_name,
        description=(description or "").strip() or f"Interact with {agent_name} agent",
        properties=AGENT_TOOL_PROPERTIES,
        target="agent",
        function_name=f"{FUNCTION_PREFIX}{agent_name.lower()}",
    )


# The properties of a workflow tool after its `input` (whose type follows the workflow's start executor).
WORKFLOW_RUN_PROPERTIES = (
    ToolProperty(
        RUN_ID_PROPERTY,
        "string",
        "Instead of input: the run to read, or to answer, the runId an earlier call returned. The call waits for the "
        "run and returns its outputs, or the requests it waits for.",
    ),
    ToolProperty(
        REQUEST_ID_PROPERTY,
        "string",
        "With runId: the pending request to answer (a requestId from the run's pendingRequests). Send the answer as "
        "response.",
    ),
    ToolProperty(
        RESPONSE_PROPERTY,
        "string",
        'With runId and requestId: the answer to that request, as JSON (true, 3, "text", {"approved": true}); text '
        "that is not JSON is sent as text.",
    ),
    ToolProperty(
        IDEMPOTENCY_KEY_PROPERTY,
        "string",
        "Optional, with input: a unique key for this call (a UUID works). Calling again with the same key and input "
        "returns the run the first call started instead of starting another; reuse it only to retry this call.",
    ),
)


def workflow_tool(workflow_name: str, description: str | None, input_property: ToolProperty) -> McpTool:
    """The tool of a hosted workflow: named after it, starting a run with `input`, reading or answering one by runId.

    No property is required (the extension would refuse a call that reads a run by runId without input); the tool
    function says what is missing instead.
    """
    return McpTool(
        name=workflow_name,
        description=(description or "").strip()
        or f"Run the {workflow_name} workflow: send input to start a run, or runId to read a run or answer a request "
        "it waits for.",
        properties=(input_property, *WORKFLOW_RUN_PROPERTIES),
        target="workflow",
        function_name=f"{FUNCTION_PREFIX}{workflow_name.lower()}",
    )


class McpToolRegistry:
    """The app's MCP tools by name; the Functions MCP extension refuses two tools whose names differ only in case."""

    def __init__(self) -> None:
        self._tools: dict[str, McpTool] = {}

    def require_free(self, name: str) -> None:
        """Refuse a tool name that is taken, before anything is registered under it.

        Raises:
            ValueError: another tool has the same name, ignoring case.
        """
        clash = self._tools.get(name.lower())
        if clash is not None:
            raise ValueError(
                f"MCP tool name {name!r} is taken (by the {clash.target} tool {clash.name!r}); MCP clients "
                "tell tools apart by name, ignoring case. Give one of them another name, or turn off the tool of one "
                "(enable_mcp_tool_trigger=False on add_agent or add_workflow)."
            )

    def add(self, tool: McpTool) -> McpTool:
        """Register a tool and return it.

        Raises:
            ValueError: another tool has the same name, ignoring case.
        """
        self.require_free(tool.name)
        self._tools[tool.name.lower()] = tool
        return tool

    @property
    def tools(self) -> list[McpTool]:
        """The registered tools, in registration order."""
        return list(self._tools.values())


def require_result_schema_support(version: str | None = None) -> None:
    """Refuse an `azure-functions` too old to declare `useResultSchema` (see `MIN_AZURE_FUNCTIONS`).

    Args:
        version: The version to check; the installed one by default.

    Raises:
        RuntimeError: the version is older than 1.26, or unreadable.
    """
    version = version or func.__version__
    found = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    if found < MIN_AZURE_FUNCTIONS:
        minimum = ".".join(map(str, MIN_AZURE_FUNCTIONS))
        raise RuntimeError(
            f"enable_mcp_tool_trigger needs azure-functions {minimum} or later (installed: {version}): older versions "
            "drop useResultSchema from the mcpToolTrigger binding, so failed turns would reach MCP clients as plain "
            f"text. Install 'azure-functions>={minimum}'. Under func start on Python 3.11 and 3.12, Core Tools' worker "
            "loads the azure-functions it bundles ahead of the app's unless PYTHON_ISOLATE_WORKER_DEPENDENCIES=1 (the "
            "template's local.settings.json sets it)."
        )


def binding_of(tool: McpTool) -> dict[str, Any]:
    """The `ToolBinding` fields of a declared tool, as its `mcpToolTrigger` binding carries them to the extension."""
    declared = tool.trigger_arguments()
    return {
        "tool_name": declared["tool_name"],
        "description": declared["description"],
        "properties": json.loads(declared["tool_properties"]),
        "use_result_schema": declared["use_result_schema"],
    }
