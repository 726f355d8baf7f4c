"""HTTP functions in the FastAPI shape that HTTP streams use: a Starlette request in, a response sent as it comes.

On Azure, once azurefunctions-extensions-http-fastapi is imported, the Python worker runs a web server that the
Functions host forwards requests to: each HTTP function gets a FastAPI (Starlette) request, with the route's
parameters in `path_params`, and returns a FastAPI response that the server sends chunk by chunk. Here the aiohttp
request becomes that Starlette request, and the response is run as the ASGI app it is, each chunk written to the
client as it is produced. Knows ASGI and aiohttp; nothing about the app's routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

from aiohttp import web

# Hop-by-hop headers aiohttp sets itself.
_DROPPED_RESPONSE_HEADERS = frozenset({b"transfer-encoding", b"connection"})
# ASGI 2.4: a server reports a client gone by raising OSError from `send` (Starlette then stops the response).
_ASGI = {"version": "3.0", "spec_version": "2.4"}


def takes_starlette_request(function: Callable[..., Any], request_param: str) -> bool:
    """Whether an HTTP function's request parameter is annotated with a Starlette (FastAPI) request type."""
    starlette = sys.modules.get("starlette.requests")
    if starlette is None:  # nothing has imported Starlette, so no annotation can name its request
        return False
    try:
        annotation = typing.get_type_hints(function).get(request_param)
    except Exception:  # an annotation that does not resolve names no request type the worker knows either
        return False
    return inspect.isclass(annotation) and issubclass(annotation, starlette.Request)


def starlette_request(request: web.BaseRequest, body: bytes, route_params: dict[str, str]) -> Any:
    """The Starlette request the worker's web server would hand the function, the route parameters included.

    Args:
        request: The client's request.
        body: Its body, already read.
        route_params: The route's parameters, as the worker copies them into `path_params`.
    """
    from starlette.requests import Request

    scope = {
        "type": "http",
        "asgi": _ASGI,
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method.upper(),
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.rel_url.raw_path.encode("latin-1"),
        "query_string": request.rel_url.raw_query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": _address(request, "peername"),
        "server": _address(request, "sockname"),
        "path_params": dict(route_params),
    }
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    never = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, Any]:
        # The body once; after it, nothing until the client goes (the response tells by failing to send).
        if pending:
            return pending.pop()
        await never
        return {"type": "http.disconnect"}

    return Request(scope, receive)


def streams_response(result: Any) -> Any:
    """The response the worker's web server (FastAPI) sends for what an HTTP-streams function returned.

    A FastAPI (Starlette) response goes as it is; any other value is encoded by FastAPI as JSON, as its route handler
    does (an ``azure.functions.HttpResponse`` included: its attributes become the JSON).

    Raises:
        TypeError: the function returned None, for which the worker's hand-off has no response (the client gets 500).
    """
    from starlette.responses import Response

    if isinstance(result, Response):
        return result
    if result is None:
        raise TypeError("an HTTP-streams function returned None; return a FastAPI response")
    from fastapi.encoders import jsonable_encoder
    from fastapi.responses import JSONResponse

    return JSONResponse(jsonable_encoder(result))


async def send_response(response: Any, request: web.BaseRequest) -> web.StreamResponse:
    """Send a function's Starlette response to the client, each chunk as it is produced.

    A client that goes away mid-response ends the sending; what the function started (a turn) goes on.

    Raises:
        TypeError: the function returned something that is not an ASGI response.
    """
    if not callable(response) or not hasattr(response, "status_code"):
        raise TypeError(
            f"an HTTP function taking the FastAPI request returned {type(response).__name__}; "
            "return a FastAPI response (azurefunctions.extensions.http.fastapi)"
        )
    sent: list[web.StreamResponse] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                if name.lower() not in _DROPPED_RESPONSE_HEADERS:
                    answer.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await answer.prepare(request)
            sent.append(answer)
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                await sent[0].write(body)
            if not message.get("more_body", False):
                await sent[0].write_eof()

    # The request's own headers too: a response may read them (Starlette's FileResponse reads `Range`).
    scope = {
        "type": "http",
        "asgi": _ASGI,
        "method": request.method.upper(),
        "path": request.path,
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
    }
    with contextlib.suppress(OSError, _client_disconnect()):
        await response(scope, _no_more_body, send)
    return sent[0] if sent else web.Response(status=204)


async def _no_more_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def _client_disconnect() -> type[BaseException]:
    from starlette.requests import ClientDisconnect

    return ClientDisconnect


def _address(request: web.BaseRequest, which: str) -> tuple[str, int] | None:
    transport = request.transport
    address = transport.get_extra_info(which) if transport is not None else None
    return (str(address[0]), int(address[1])) if isinstance(address, tuple) and len(address) >= 2 else None
