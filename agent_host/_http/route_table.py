"""An HTTP route as one declaration: its function name, its path, and the handler of each method it serves.

As in starlette's route table, path, methods and handlers sit together; `endpoint` serves every method a route
declares, answers `OPTIONS` (204 with `Allow`) and any other method (405) itself, and renders whatever a handler
raises, so no handler checks its method or dispatches on it. Knows the handlers' signatures, not what they do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import azure.functions as func

from .._errors import AgentHostError, MethodNotAllowedError, internal_error
from .event_stream import RouteResponse
from .responses import respond

logger = logging.getLogger("agent_host.http")

# A method's handler: `handler(req)`, or `handler(req, client)` on a route that takes the durable client.
MethodHandler = Callable[..., Awaitable[RouteResponse]]


@dataclass(frozen=True)
class HttpRoute:
    """One HTTP route of the app.

    Attributes:
        name: The HTTP function's name (`api_*`).
        path: The route template under `/api` (`agents/{agent}/run`).
        methods: The handler of each method the route serves, in the order `Allow` lists them.
        client: Whether the handlers take the durable client.
        auth_level: The route's authorization level; None takes the app's.
        render_error: How the route renders an error when not as every other route does (a front door that
            speaks another protocol answers in its shape); None renders it as `responses.render_error` does.
    """

    name: str
    path: str
    methods: Mapping[str, MethodHandler]
    client: bool = True
    auth_level: func.AuthLevel | None = None
    render_error: Callable[[AgentHostError], func.HttpResponse] | None = None

    async def endpoint(self, req: func.HttpRequest, *client: Any) -> RouteResponse:
        """Serve one request: the handler of its method, with the durable client when the route takes one."""
        method = req.method.upper()
        if self.render_error is not None and method not in (*self.methods, "OPTIONS"):
            return self.render_error(MethodNotAllowedError(method, tuple(self.methods)))
        return await respond(req, tuple(self.methods), lambda: self._serve(req, method, client))

    async def _serve(self, req: func.HttpRequest, method: str, client: tuple[Any, ...]) -> RouteResponse:
        """The handler's answer; with a renderer of its own, what it raises rendered by it."""
        if self.render_error is None:
            return await self.methods[method](req, *client)
        try:
            return await self.methods[method](req, *client)
        except AgentHostError as error:
            return self.render_error(error)
        except Exception:
            logger.exception("Unexpected error handling %s %r", method, req.url.split("?", 1)[0])
            return self.render_error(internal_error())
