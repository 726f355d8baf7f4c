"""MCP tool functions: an app's `mcpToolTrigger` functions and their tools, called as the extension calls them.

Reads only what ``app.get_functions()`` reports. What a call hands the function (the invocation context JSON) follows
the Functions MCP extension's ``McpToolTriggerBinding``; how its return value becomes a ``CallToolResult`` is
``_mcp_extension/tool_binding.py``'s, shared with the standalone worker. Knows nothing about HTTP, JSON-RPC or the app.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import azure.functions as func

from .._mcp_extension.tool_binding import ToolBinding
from .functions import DEFAULT_TASK_HUB

if TYPE_CHECKING:
    from .invocation import FunctionInvoker

logger = logging.getLogger(__name__)

MCP_TOOL_TRIGGER = "mcpToolTrigger"


@dataclass
class McpToolFunction(ToolBinding):
    """One ``mcpToolTrigger`` function and the tool it declares (the binding's fields are ``ToolBinding``'s).

    Attributes:
        function_name: The function's name.
        context_param: Parameter receiving the invocation context JSON.
        client_param: Parameter receiving the durable client binding JSON, if the function has one.
        task_hub: Task hub named by the durable client binding.
        user_function: The callable to invoke (sync or async).
        invoke: Calls it through the invoker (``FunctionInvoker.call_tool``): the encoded return value.
        client_binding: The durable client binding JSON for a task hub (known only once the host is bound).
    """

    function_name: str
    context_param: str
    client_param: str | None
    task_hub: str
    user_function: Callable[..., Any]
    invoke: Callable[[McpToolFunction, str, str], Awaitable[str]]
    client_binding: Callable[[str], str]
    is_async: bool = field(init=False)

    def __post_init__(self) -> None:
        """Note whether the function must be awaited or run on a thread."""
        self.is_async = inspect.iscoroutinefunction(self.user_function)

    async def call(self, context: dict[str, Any]) -> dict[str, Any]:
        """Invoke the function with an invocation context and turn its return value into a ``CallToolResult``.

        Args:
            context: The invocation context (``name``, ``arguments``, ``sessionid``, ``transport``...).

        Returns:
            The ``CallToolResult`` as JSON-ready data.

        Raises:
            ToolResultError: The function returned an envelope the extension cannot read.
            Exception: Whatever the function raised.
        """
        return self.result(await self.invoke(self, json.dumps(context), self.client_binding(self.task_hub)))


def discover_mcp_tools(
    functions: Iterable[func.Function], invoker: FunctionInvoker, client_binding: Callable[[str], str]
) -> list[McpToolFunction]:
    """The app's ``mcpToolTrigger`` functions, as tools.

    Args:
        functions: The result of ``app.get_functions()``.
        invoker: What runs the tool functions.
        client_binding: The durable client binding JSON a tool function gets, for a task hub.

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
        name = function.get_function_name() or "function"
        tool = _tool_function(name, function, trigger_dict, invoker, client_binding)
        if tool.tool_name.lower() in tools:
            raise ValueError(f"two MCP tool functions declare the tool {tool.tool_name!r}")
        tools[tool.tool_name.lower()] = tool
    return list(tools.values())


def _tool_function(
    name: str,
    function: func.Function,
    trigger: dict[str, Any],
    invoker: FunctionInvoker,
    client_binding: Callable[[str], str],
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
        client_binding=client_binding,
    )
