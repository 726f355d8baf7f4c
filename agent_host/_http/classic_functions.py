"""HTTP functions in the classic shape: `azure.functions.HttpRequest` in, `azure.functions.HttpResponse` out.

Without HTTP streams a Python function cannot send its response in pieces, so an event stream is sent whole, once
it has ended. Knows the function signatures the worker accepts, not what any route does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import azure.durable_functions as df
import azure.functions as func

from .event_stream import EVENT_STREAM_MEDIA_TYPE, EventStreamResponse, RouteResponse, content_type

Handler = Callable[[func.HttpRequest], Awaitable[RouteResponse]]
ClientHandler = Callable[[func.HttpRequest, df.DurableOrchestrationClient], Awaitable[RouteResponse]]


def http_function(handler: Handler) -> Callable[[func.HttpRequest], Awaitable[func.HttpResponse]]:
    """A function taking only the request, for `handler`."""

    async def function(req: func.HttpRequest) -> func.HttpResponse:
        return await whole_response(await handler(req))

    return function


def client_http_function(
    handler: ClientHandler,
) -> Callable[[func.HttpRequest, df.DurableOrchestrationClient], Awaitable[func.HttpResponse]]:
    """A function taking the request and the durable client (`client`), for `handler`."""

    async def function(req: func.HttpRequest, client: df.DurableOrchestrationClient) -> func.HttpResponse:
        return await whole_response(await handler(req, client))

    return function


async def whole_response(result: RouteResponse) -> func.HttpResponse:
    """A handler's answer as one response: an event stream is collected to its end; a body says its charset."""
    if not isinstance(result, EventStreamResponse):
        if result.get_body() and "content-type" not in result.headers:  # case-insensitive
            result.headers["Content-Type"] = content_type(result.mimetype, result.charset)
        return result
    headers = {name: value for name, value in result.all_headers.items() if name.lower() != "content-type"}
    body = await result.collect()
    return func.HttpResponse(
        body, status_code=result.status, headers=headers, mimetype=EVENT_STREAM_MEDIA_TYPE, charset="utf-8"
    )
