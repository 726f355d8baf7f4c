"""HTTP responses: JSON bodies, and the one renderer of every error body (the 500 included).

Handlers raise `AgentHostError`s; `respond` turns whatever a handler raises into a response, so no handler writes
an error body by hand.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import azure.functions as func

from .._errors import AgentHostError, MethodNotAllowedError, internal_error, status_for_code
from .event_stream import RouteResponse

logger = logging.getLogger("agent_host.http")

JSON_MEDIA_TYPE = "application/json"

# What a route's handler answers: a plain response, or (for the streaming routes) an event stream as well.
HandlerResponse = TypeVar("HandlerResponse", bound=RouteResponse)


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> func.HttpResponse:
    """A JSON response; an echoed value holding an unpaired surrogate is escaped rather than failing it."""
    return func.HttpResponse(
        json.dumps(body, ensure_ascii=False).encode("utf-8", "backslashreplace"),
        status_code=status,
        mimetype=JSON_MEDIA_TYPE,
        charset="utf-8",
        headers=headers,
    )


def render_error(error: AgentHostError) -> func.HttpResponse:
    """The one rendering of every error: `{"error": {"code", "message"}}` (plus the error's own fields), with
    the status of its code and its headers."""
    return json_response(status_for_code(error.code), error.body(), headers=error.headers or None)


async def respond(
    req: func.HttpRequest, methods: tuple[str, ...], handler: Callable[[], Awaitable[HandlerResponse]]
) -> HandlerResponse | func.HttpResponse:
    """Run a route's handler for one of its `methods`, rendering any error it raises.

    `OPTIONS` answers 204 with the route's methods in `Allow`; any other method outside `methods` answers 405.
    """
    method = req.method.upper()
    try:
        if method == "OPTIONS":
            return func.HttpResponse(status_code=204, headers={"Allow": ", ".join((*methods, "OPTIONS"))})
        if method not in methods:
            raise MethodNotAllowedError(method, methods)
        return await handler()
    except AgentHostError as error:
        return render_error(error)
    except Exception:
        logger.exception("Unexpected error handling %s %r", method, req.url.split("?", 1)[0])
        return render_error(internal_error())
