"""The Functions MCP extension's Streamable HTTP transport at `/runtime/webhooks/mcp`, for any web framework.

Stateless like the extension's: one JSON-RPC message per POST, a request's answer sent as one server-sent event, a
notification answered 202; `initialize` issues an `Mcp-Session-Id`, which later requests echo; GET and DELETE are
not offered (405). A host hands over the request's method, headers and body and sends back the `McpReply`; it checks
keys before. Knows HTTP status codes and headers, not the host's framework or what tools do.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .protocol import Caller, McpProtocolError, McpServer, error_message, parse_message

MCP_PATH = "/runtime/webhooks/mcp"
SESSION_HEADER = "Mcp-Session-Id"
STREAMABLE_TRANSPORT = "http-streamable"
SSE_MEDIA_TYPE = "text/event-stream"
JSON_CONTENT_TYPE = "application/json; charset=utf-8"
NO_CACHE = {"Cache-Control": "no-cache,no-store"}

# The extension's sessions are stateless (the id is encrypted client state); any visible-ASCII id is accepted here.
_SESSION_ID = re.compile(r"[\x21-\x7e]{1,512}")


@dataclass(frozen=True)
class McpReply:
    """An HTTP answer of the MCP endpoint: its status, headers (`Content-Type` among them when there is a body) and
    body."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def sse_event(event: str, data: str) -> bytes:
    """One server-sent event (`data` holds no newline: it is compact JSON or a URL)."""
    return f"event: {event}\ndata: {data}\n\n".encode()


async def streamable_reply(
    server: McpServer,
    method: str,
    path: str,
    headers: Mapping[str, str],
    read_body: Callable[[], Awaitable[bytes]],
) -> McpReply:
    """Answer one request to the Streamable HTTP endpoint.

    Args:
        server: Answers the JSON-RPC message.
        method: The request's method.
        path: The request's path, for the 405's message.
        headers: The request's headers, looked up ignoring case; `items()` gives each one as sent, repeats included.
        read_body: Reads the request's body (the host's limits apply).
    """
    if method.upper() != "POST":
        return method_not_allowed(method, path, "POST", "Streamable HTTP takes POST only (the extension is stateless).")
    if not _accepts_json_and_events(headers.get("Accept", "")):
        return rpc_error(406, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream")
    body = await read_body()
    if not declares_json(headers, body):
        return unsupported_media_type()
    session_id = headers.get(SESSION_HEADER)
    if session_id is not None and not _SESSION_ID.fullmatch(session_id):
        return rpc_error(400, -32000, "Invalid client state.")
    try:
        message = parse_message(body)
    except McpProtocolError as error:
        return rpc_error(400, error.code, error.message)
    answer = await server.answer(message, Caller(STREAMABLE_TRANSPORT, session_id, joined_headers(headers)))
    if answer is None:
        return McpReply(202)
    reply_headers = {**NO_CACHE, "Content-Type": f"{SSE_MEDIA_TYPE}; charset=utf-8"}
    if message.get("method") == "initialize" and "result" in answer:
        reply_headers[SESSION_HEADER] = uuid.uuid4().hex
    return McpReply(200, sse_event("message", json.dumps(answer, ensure_ascii=False)), reply_headers)


def declares_json(headers: Mapping[str, str], body: bytes) -> bool:
    """Whether a body is declared JSON (`application/json` or a `+json` type, any parameters), undeclared, or empty.

    An undeclared body is read as JSON: clients that are not browsers often send none. The type of an empty body does
    not matter (aiohttp's client declares one `application/octet-stream`).
    """
    media = headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    return not body or not media or _is_json(media)


def joined_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers for the invocation context, repeated ones joined with commas as the extension does."""
    joined: dict[str, str] = {}
    for name, value in headers.items():
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return joined


def json_reply(status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> McpReply:
    """A JSON answer."""
    return McpReply(status, json.dumps(body).encode(), {"Content-Type": JSON_CONTENT_TYPE, **(headers or {})})


def rpc_error(status: int, code: int, message: str) -> McpReply:
    """An HTTP error whose body is a JSON-RPC error, as the extension answers transport-level problems."""
    return json_reply(status, error_message(None, McpProtocolError(code, message)))


def unsupported_media_type() -> McpReply:
    """415 for a message not sent as JSON, in the words of the MCP SDK's own server."""
    return rpc_error(415, -32000, "Unsupported Media Type: Content-Type must be application/json")


def method_not_allowed(method: str, path: str, allowed: str, why: str) -> McpReply:
    """405 with `Allow`, in the JSON error body every error of our hosts has."""
    message = f"{method} is not allowed on {path}; use {allowed}. {why}"
    return json_reply(405, {"error": {"code": "method_not_allowed", "message": message}}, {"Allow": allowed})


def _accepts_json_and_events(accept: str) -> bool:
    """Whether an Accept header takes both JSON and server-sent events, as the extension requires of a POST."""
    types = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}

    def takes(media: str) -> bool:
        return media in types or f"{media.split('/')[0]}/*" in types or "*/*" in types

    return takes("application/json") and takes(SSE_MEDIA_TYPE)


def _is_json(media: str) -> bool:
    """Whether a media type is JSON (`application/json` or a `+json` type), as the extension accepts."""
    return media == "application/json" or media.endswith("+json")
