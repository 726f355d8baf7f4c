"""Reading a tool call's arguments from the extension's invocation context, the same way for every kind of tool.

The extension hands a tool function `{"name", "arguments", "sessionid", "transport", ...}` as JSON; absent, null and
blank arguments count as absent, as in the published host. Knows the context's shape, not what any tool does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidRequestError, MessageTooLargeError
from .._http.requests import IDEMPOTENCY_KEY_PATTERN
from .tools import IDEMPOTENCY_KEY_PROPERTY


def tool_arguments(context: str) -> dict[str, Any]:
    """The call's arguments (empty when it sent none).

    Raises:
        InvalidRequestError: the context is not JSON, or nested deeper than the parser goes (`invalid_json`).
    """
    arguments = _context(context).get("arguments")
    return arguments if isinstance(arguments, dict) else {}


def transport_session(context: str) -> str | None:
    """The MCP session the call came in (`sessionid`: the client's `Mcp-Session-Id`, or its SSE connection), if any.

    Raises:
        InvalidRequestError: as `tool_arguments`.
    """
    session = _context(context).get("sessionid")
    return session if isinstance(session, str) and session else None


def transport_headers(context: str) -> dict[str, str]:
    """The headers of the HTTP request the call came in (`transport.properties.headers`), empty when not given.

    Raises:
        InvalidRequestError: as `tool_arguments`.
    """
    transport = _context(context).get("transport")
    properties = transport.get("properties") if isinstance(transport, dict) else None
    headers = properties.get("headers") if isinstance(properties, dict) else None
    if not isinstance(headers, dict):
        return {}
    return {str(name): value for name, value in headers.items() if isinstance(value, str)}


def _context(context: str) -> dict[str, Any]:
    try:
        data = json.loads(context)
    except (TypeError, ValueError, RecursionError):
        raise InvalidRequestError("The MCP tool invocation context is not JSON.", code="invalid_json") from None
    return data if isinstance(data, dict) else {}


def text_argument(arguments: Mapping[str, Any], name: str, code: str) -> str | None:
    """An optional string argument; absent, null or blank is None.

    Raises:
        InvalidRequestError: the argument is not a string (with `code`).
    """
    value = arguments.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(
            f"The {name!r} argument must be a string, got {type(value).__name__} ({json.dumps(value)[:80]}).",
            code=code,
        )
    return value


def idempotency_key_argument(arguments: Mapping[str, Any]) -> str | None:
    """The caller's idempotency key, or None.

    Raises:
        InvalidRequestError: it is not 1-255 visible ASCII characters (`invalid_idempotency_key`).
    """
    key = text_argument(arguments, IDEMPOTENCY_KEY_PROPERTY, "invalid_idempotency_key")
    if key is not None and not IDEMPOTENCY_KEY_PATTERN.fullmatch(key):
        raise InvalidRequestError(
            f"The {IDEMPOTENCY_KEY_PROPERTY!r} argument must be 1-255 visible ASCII characters (a UUID works well).",
            code="invalid_idempotency_key",
        )
    return key


def require_size_within(value: Any, limit: int, what: str) -> None:
    """Refuse an argument whose UTF-8 size (as text, or as JSON when it is not text) is over `limit` bytes.

    Raises:
        MessageTooLargeError: naming `what`.
    """
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise MessageTooLargeError(size, limit, what=what)
