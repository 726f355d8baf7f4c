"""The MCP server side of the Functions MCP extension: JSON-RPC messages in, answers out, whatever the transport.

It answers what the extension's server answers (ModelContextProtocol C# SDK 0.4): ``initialize`` (protocol versions
2024-11-05, 2025-03-26 and 2025-06-18; an unknown version is answered with the newest), ``ping``, ``tools/list`` and
``tools/call``, with the extension's errors for an unknown tool or a missing required property. Other methods are
"not available". Serves the local host's tool functions and the standalone worker's agent tools alike, through
``ServedTool``; knows nothing about HTTP or how a tool runs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

logger = logging.getLogger(__name__)

SUPPORTED_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18")
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[-1]
# host.json's extensions.mcp serverName and serverVersion, at their defaults.
SERVER_INFO = {"name": "Azure Functions MCP server", "version": "1.0.0"}

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class McpProtocolError(Exception):
    """A JSON-RPC error answer: a code from the JSON-RPC and MCP specifications, and a message."""

    def __init__(self, code: int, message: str) -> None:
        """Create the error.

        Args:
            code: The JSON-RPC error code.
            message: What was wrong.
        """
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Caller:
    """Who sent a message, as the extension tells a tool function (``sessionid`` and ``transport``).

    Attributes:
        transport: ``http-streamable`` or ``http-sse``.
        session_id: The MCP session (the ``Mcp-Session-Id`` header, or the SSE connection's client id).
        headers: The HTTP request's headers, repeated ones joined with commas.
        client_info: What the client said about itself in ``initialize``, where the session kept it.
    """

    transport: str
    session_id: str | None
    headers: dict[str, str] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None


def parse_message(body: bytes) -> dict[str, Any]:
    """One JSON-RPC message from a request body (batches ended with protocol 2025-06-18; the extension reads one).

    Raises:
        McpProtocolError: the body is not JSON (parse error), or not one JSON-RPC 2.0 message (invalid request).
    """
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise McpProtocolError(PARSE_ERROR, f"Parse error: the body is not JSON ({exc}).") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise McpProtocolError(
            INVALID_REQUEST,
            'Invalid Request: send one JSON-RPC 2.0 message object ({"jsonrpc": "2.0", ...}).',
        )
    if "method" in message and not isinstance(message["method"], str):
        raise McpProtocolError(INVALID_REQUEST, "Invalid Request: 'method' must be a string.")
    if "id" in message and not _is_message_id(message["id"]):
        raise McpProtocolError(INVALID_REQUEST, "Invalid Request: 'id' must be a string, a number or null.")
    return message


def _is_message_id(value: Any) -> bool:
    """Whether a value may be a JSON-RPC 2.0 id: a string, a number or null (a JSON true or false is none of them)."""
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def is_request(message: dict[str, Any]) -> bool:
    """Whether a message expects an answer (a request, not a notification or a client's response)."""
    return "method" in message and "id" in message


def error_message(request_id: Any, error: McpProtocolError) -> dict[str, Any]:
    """The JSON-RPC error answer to a request (``id`` null when the request's id could not be read)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": error.code, "message": error.message}}


class ServedTool(Protocol):
    """A tool the server lists and calls (``tool_binding.ToolBinding`` gives the listing and reads results)."""

    @property
    def tool_name(self) -> str:
        """The name clients call it by."""
        ...

    @property
    def function_name(self) -> str:
        """What serves it, for the log."""
        ...

    @property
    def required(self) -> list[str]:
        """Names of the properties a call must give (not null)."""
        ...

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        ...

    async def call(self, context: dict[str, Any]) -> dict[str, Any]:
        """Serve a call given the extension's invocation context; the ``CallToolResult`` as JSON-ready data."""
        ...


class McpServer:
    """Answers JSON-RPC requests for a host's tools."""

    def __init__(self, tools: Sequence[ServedTool]) -> None:
        """Serve these tools.

        Args:
            tools: The tools, in the order ``tools/list`` shows them.
        """
        self.tools = {tool.tool_name.lower(): tool for tool in tools}

    async def answer(self, message: dict[str, Any], caller: Caller) -> dict[str, Any] | None:
        """The answer to one message: a result or an error for a request, None for anything else.

        Args:
            message: A message ``parse_message`` accepted.
            caller: Who sent it.

        Returns:
            The JSON-RPC response or error, or None for a notification or a client's response.
        """
        if not is_request(message):
            return None
        try:
            result = await self._result(message["method"], message.get("params") or {}, caller)
        except McpProtocolError as error:
            return error_message(message["id"], error)
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    async def _result(self, method: str, params: Any, caller: Caller) -> dict[str, Any]:
        """The result of one request.

        Raises:
            McpProtocolError: an unknown method, unusable params, an unknown tool or a missing required property.
        """
        if not isinstance(params, dict):
            raise McpProtocolError(INVALID_PARAMS, f"Invalid params: the params of {method!r} must be an object.")
        if method == "initialize":
            return initialize_result(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool.listing() for tool in self.tools.values()]}
        if method == "tools/call":
            return await self._call_tool(params, caller)
        raise McpProtocolError(METHOD_NOT_FOUND, f"Method '{method}' is not available.")

    async def _call_tool(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Call a tool's function, as the extension's ``McpToolListener`` does.

        Raises:
            McpProtocolError: the tool is unknown, or a required property is missing or null.
        """
        name = params.get("name")
        if not isinstance(name, str) or (tool := self.tools.get(name.lower())) is None:
            raise McpProtocolError(INVALID_PARAMS, f"Unknown tool: '{name}'")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise McpProtocolError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object.")
        missing = [prop for prop in tool.required if (arguments or {}).get(prop) is None]
        if missing:
            raise McpProtocolError(
                INVALID_PARAMS,
                f"One or more required tool properties are missing values. Please provide: {', '.join(missing)}",
            )
        try:
            return await tool.call(_invocation_context(name, arguments, caller))
        except Exception:
            # The extension's SDK answers any failure of the function with this text: its details may be secret.
            logger.exception("MCP tool function %r failed", tool.function_name)
            return {"content": [{"type": "text", "text": f"An error occurred invoking '{name}'."}], "isError": True}


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` result: the client's protocol version if supported, else the newest; tools only."""
    requested = params.get("protocolVersion")
    version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
    return {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": dict(SERVER_INFO)}


def _invocation_context(name: str, arguments: dict[str, Any] | None, caller: Caller) -> dict[str, Any]:
    """What a tool function receives: the extension's ``ToolInvocationContext``, null members left out as it does."""
    transport: dict[str, Any] = {"name": caller.transport, "properties": {"headers": caller.headers}}
    if caller.session_id is not None:
        transport["sessionId"] = caller.session_id
    context: dict[str, Any] = {"name": name, "transport": transport}
    if arguments is not None:
        context["arguments"] = arguments
    if caller.session_id is not None:
        context["sessionid"] = caller.session_id
    if caller.client_info is not None:
        context["clientinfo"] = caller.client_info
    return context
