"""HTTP functions in the shape HTTP streams need: the FastAPI `Request` in, a FastAPI response out.

Importing this module turns HTTP streams on for the whole app: azurefunctions-extensions-http-fastapi registers its
types when imported, and from then on the Python worker hands every HTTP function the FastAPI request and sends the
response it returns chunk by chunk. Handlers keep their one shape: the request is read into an
`azure.functions.HttpRequest`, and an event stream is sent event by event. Knows the function signatures, not
what any route does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import azure.durable_functions as df
import azure.functions as func
from azurefunctions.extensions.http.fastapi import Request, Response, StreamingResponse

from .classic_functions import ClientHandler, Handler
from .event_stream import EventStreamResponse, RouteResponse, content_type

# Functions answers no body with these; the response knows its own length.
_DROPPED_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})


def http_function(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A function taking only the request, for `handler`."""

    async def function(req: Request) -> Response:
        return fastapi_response(await handler(await functions_request(req)))

    return function


def client_http_function(
    handler: ClientHandler,
) -> Callable[[Request, df.DurableOrchestrationClient], Awaitable[Response]]:
    """A function taking the request and the durable client (`client`), for `handler`."""

    async def function(req: Request, client: df.DurableOrchestrationClient) -> Response:
        return fastapi_response(await handler(await functions_request(req), client))

    return function


async def functions_request(req: Request) -> func.HttpRequest:
    """The FastAPI request as the handlers read requests: body, headers (repeats joined), first query values, the
    route parameters the worker copied into `path_params`."""
    headers: dict[str, str] = {}
    for name, value in req.headers.items():
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    params: dict[str, str] = {}
    for name, value in req.query_params.multi_items():
        params.setdefault(name, value)
    return func.HttpRequest(
        method=req.method.upper(),
        url=public_url(req),
        headers=headers,
        params=params,
        route_params={name: str(value) for name, value in req.path_params.items()},
        body=await req.body(),
    )


def public_url(req: Request) -> str:
    """The URL the caller used: the worker's web server is reached through the Functions host, which says where
    it was called in `X-Forwarded-Proto` and `X-Forwarded-Host` when it forwards them (only `Location` headers
    echo this URL back)."""
    url = req.url
    scheme = (req.headers.get("x-forwarded-proto") or "").split(",")[0].strip()
    host = (req.headers.get("x-forwarded-host") or "").split(",")[0].strip()
    if scheme in ("http", "https"):
        url = url.replace(scheme=scheme)
    if host:
        url = url.replace(netloc=host)
    return str(url)


def fastapi_response(result: RouteResponse) -> Response:
    """A handler's answer as a FastAPI response: an event stream as a streaming response, sent as it is produced."""
    if isinstance(result, EventStreamResponse):
        return StreamingResponse(result.body, status_code=result.status, headers=result.all_headers)
    headers = {name: value for name, value in result.headers.items() if name.lower() not in _DROPPED_HEADERS}
    body = result.get_body()
    if body and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = content_type(result.mimetype, result.charset)
    return Response(content=body, status_code=result.status_code, headers=headers)
