"""MCP tool functions: an app's `mcpToolTrigger` functions and their tools, called as the extension calls them.

Reads only what ``app.get_functions()`` reports. What a call hands the function (the invocation context JSON) and how
its return value becomes a ``CallToolResult`` follow the Functions MCP extension (``McpToolTriggerBinding``,
``SimpleToolReturnValueBinder`` and ``ToolReturnValueBinder``). Knows nothing about HTTP, JSON-RPC or the app.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import azure.functions as func

from .functions import DEFAULT_TASK_HUB

if TYPE_CHECKING:
    from .invocation import FunctionInvoker

logger = logging.getLogger(__name__)

MCP_TOOL_TRIGGER = "mcpToolTrigger"
# The envelope a function returns under `useResultSchema`: `type` says how to read `content`.
CALL_TOOL_RESULT = "call_tool_result"
MULTI_CONTENT_RESULT = "multi_content_result"


class ToolResultError(ValueError):
    """A tool function returned something the extension could not turn into a tool result."""


@dataclass
class McpToolFunction:
    """One ``mcpToolTrigger`` function and the tool it declares.

    Attributes:
        function_name: The function's name.
        tool_name: The tool's name, as clients call it.
        description: The tool's description ('' when none).
        properties: The binding's ``toolProperties`` entries.
        use_result_schema: Whether the function returns a whole tool result (the envelope) instead of text.
        context_param: Parameter receiving the invocation context JSON.
        client_param: Parameter receiving the durable client binding JSON, if the function has one.
        task_hub: Task hub named by the durable client binding.
        user_function: The callable to invoke (sync or async).
        invoke: Calls it through the invoker (``FunctionInvoker.call_tool``): the encoded return value.
    """

    function_name: str
    tool_name: str
    description: str
    properties: list[dict[str, Any]]
    use_result_schema: bool
    context_param: str
    client_param: str | None
    task_hub: str
    user_function: Callable[..., Any]
    invoke: Callable[[McpToolFunction, str, str], Awaitable[str]]
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        """Note whether the function must be awaited or run on a thread."""
        self.is_async = inspect.iscoroutinefunction(self.user_function)

    @property
    def required(self) -> list[str]:
        """Names of the required properties, which the extension checks before it calls the function."""
        return [str(p["propertyName"]) for p in self.properties if p.get("isRequired")]

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it: name, description and the input schema built from its properties."""
        schema_properties: dict[str, Any] = {}
        for prop in self.properties:
            kind: dict[str, Any] = {"type": prop.get("propertyType") or "string"}
            if prop.get("enumValues"):
                kind["enum"] = list(prop["enumValues"])
            entry = {"type": "array", "items": kind} if prop.get("isArray") else dict(kind)
            entry["description"] = prop.get("description") or ""
            schema_properties[str(prop["propertyName"])] = entry
        schema = {"type": "object", "properties": schema_properties, "required": self.required}
        listing: dict[str, Any] = {"name": self.tool_name, "inputSchema": schema}
        if self.description:  # the extension leaves a missing description out, as it does every null member
            listing["description"] = self.description
        return listing

    async def call(self, context: dict[str, Any], client_binding: str) -> dict[str, Any]:
        """Invoke the function with an invocation context and turn its return value into a ``CallToolResult``.

        Args:
            context: The invocation context (``name``, ``arguments``, ``sessionid``, ``transport``...).
            client_binding: The durable client binding JSON, for a function that has one.

        Returns:
            The ``CallToolResult`` as JSON-ready data.

        Raises:
            ToolResultError: The function returned an envelope the extension cannot read.
            Exception: Whatever the function raised.
        """
        returned = await self.invoke(self, json.dumps(context), client_binding)
        if not self.use_result_schema:
            return {"content": [{"type": "text", "text": returned}]}
        return _enveloped_result(returned)


def _enveloped_result(returned: str) -> dict[str, Any]:
    """Read a ``useResultSchema`` return value: ``{"type", "content", "structuredContent"}``, inner parts as JSON text.

    Raises:
        ToolResultError: it is not such an envelope.
    """
    try:
        envelope = json.loads(returned)
        kind = str(envelope["type"]).lower()
        content = json.loads(envelope["content"])
        structured = envelope.get("structuredContent")
    except (ValueError, TypeError, KeyError) as exc:
        raise ToolResultError(f"not a tool result envelope ({type(exc).__name__}: {exc})") from None
    if kind == CALL_TOOL_RESULT:
        if not isinstance(content, dict):
            raise ToolResultError("a call_tool_result envelope must hold a CallToolResult object")
        return content
    blocks = content if kind == MULTI_CONTENT_RESULT else [content]
    if not isinstance(blocks, list) or not blocks or not all(isinstance(block, dict) for block in blocks):
        raise ToolResultError(f"a {kind} envelope holds no content blocks")
    result: dict[str, Any] = {"content": blocks}
    if structured:
        try:
            result["structuredContent"] = json.loads(structured)
        except (ValueError, TypeError) as exc:
            raise ToolResultError(f"structuredContent is not JSON ({exc})") from None
    return result


def discover_mcp_tools(functions: Iterable[func.Function], invoker: FunctionInvoker) -> list[McpToolFunction]:
    """The app's ``mcpToolTrigger`` functions, as tools.

    Args:
        functions: The result of ``app.get_functions()``.
        invoker: What runs the tool functions.

    Returns:
        The tools, in the app's order.

    Raises:
        ValueError: Two tools share a name ignoring case (the extension refuses that too), or a tool's
            ``toolProperties`` is not a JSON array of properties.
    """
    tools: dict[str, McpToolFunction] = {}
    for function in functions:
        trigger = function.get_trigger()
        trigger_dict: dict[str, Any] = trigger.get_dict_repr() if trigger is not None else {}
        if trigger_dict.get("type") != MCP_TOOL_TRIGGER:
            continue
        tool = _tool_function(function.get_function_name() or "function", function, trigger_dict, invoker)
        if tool.tool_name.lower() in tools:
            raise ValueError(f"two MCP tool functions declare the tool {tool.tool_name!r}")
        tools[tool.tool_name.lower()] = tool
    return list(tools.values())


def _tool_function(
    name: str, function: func.Function, trigger: dict[str, Any], invoker: FunctionInvoker
) -> McpToolFunction:
    """Describe one tool function from its trigger and bindings.

    Raises:
        ValueError: Its ``toolProperties`` is not a JSON array of objects with a ``propertyName``.
    """
    try:
        properties = json.loads(trigger.get("toolProperties") or "[]")
    except ValueError as exc:
        raise ValueError(f"Function {name!r}: toolProperties is not JSON ({exc})") from None
    if not isinstance(properties, list) or not all(isinstance(p, dict) and p.get("propertyName") for p in properties):
        raise ValueError(f"Function {name!r}: toolProperties must be a JSON array of objects with a propertyName")
    context_param = str(trigger.get("name") or "context")
    client_param: str | None = None
    task_hub = DEFAULT_TASK_HUB
    for binding in function.get_bindings():
        info = binding.get_dict_repr()
        if info.get("type") == "durableClient":
            client_param = str(info.get("name"))
            task_hub = str(info.get("taskHub") or DEFAULT_TASK_HUB)
        elif info.get("type") != MCP_TOOL_TRIGGER:
            logger.warning(
                "function %r: the local host does not provide %s binding %r", name, info.get("type"), info.get("name")
            )
    return McpToolFunction(
        function_name=name,
        tool_name=str(trigger.get("toolName") or name),
        description=str(trigger.get("description") or ""),
        properties=properties,
        use_result_schema=bool(trigger.get("useResultSchema")),
        context_param=context_param,
        client_param=client_param,
        task_hub=task_hub,
        user_function=function.get_user_function(),
        invoke=invoker.call_tool,
    )
