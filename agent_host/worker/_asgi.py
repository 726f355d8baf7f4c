"""The HTTP API outside Functions: an ASGI app serving a worker's agents on AgentFunctionApp's routes, with its
handlers, over a durabletask client; and their MCP tools at the Functions MCP extension's path.

Each request becomes the `azure.functions.HttpRequest` the handlers read, as an HTTP stream function's does
(`_http/fastapi_functions.py`), and their answer goes back as a Starlette response (an event stream sent event by
event). MCP requests go to the Streamable HTTP transport the local host serves too
(`_mcp_extension/streamable_http.py`).
There is no function key: an auth hook decides, before any handler runs; with `conversation_owners`, the admin key
has a header of its own. Knows ASGI, the route table and the auth hook, not what any route does.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Literal

import azure.functions as func
from durabletask.client import TaskHubGrpcClient
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._conversation_client.in_flight import TurnsInFlight
from .._errors import AgentHostError, UnauthenticatedError
from .._http.agent_routes import conversation_list_route, conversation_routes, openai_routes
from .._http.conversation_list import ConversationListRoute
from .._http.fastapi_functions import fastapi_response, functions_request
from .._http.openai_responses import OpenAIResponsesRoutes
from .._http.responses import json_response, render_error
from .._http.route_table import HttpRoute
from .._http.routes import HealthRoute, Routes
from .._mcp_extension.protocol import McpServer
from .._mcp_extension.streamable_http import MCP_PATH, streamable_reply
from .._owners import OwnerHook, owners_of
from .._streaming.channel import TurnStreamStore
from ._conversation_client import TaskHubConversations
from ._mcp import agent_tool_server
from ._worker import AgentWorker

API_KEY_SETTING = "AGENT_HOST_API_KEY"
# With conversation owners on, a request presenting the `AGENT_HOST_ADMIN_KEY` key in this header reaches every
# conversation. A header of its own, not `Authorization`: that carries the API key (or what the app's auth hook
# checks), so an admin request passes the auth hook like any other and then names itself the admin.
ADMIN_KEY_HEADER = "x-agent-host-admin-key"
ROUTE_PREFIX = "/api"
# Every route takes every method, so the route table answers a wrong one (405 with Allow), as on Functions.
_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
_BEARER = "bearer "
_HOOK_REFUSAL = "The app's auth hook refused this request. Send the credentials the app's auth hook checks."
_NOT_SERVED = (
    "The standalone worker serves /api/health, /api/agents/{agent}/conversations (the list), "
    "/api/agents/{agent}/conversations/{conversationId}/... (turns, cancel, stream, messages, retention, delete), "
    "/api/agents/{agent}/run, /api/agents/{agent}/agui, /api/openai/v1/... and, for agents added with "
    "enable_mcp_tool_trigger, their MCP tools at POST /runtime/webhooks/mcp (Streamable HTTP); workflows, the "
    "inspector and MCP's legacy SSE transport are served by AgentFunctionApp only (docs/standalone-worker.md)."
)

AuthHook = Callable[[Mapping[str, str]], bool]
"""Decides whether a request may be served, from its headers (names in lower case)."""


class ApiKeyAuth:
    """The auth hook that allows a request carrying the key as `Authorization: Bearer <key>` (what the OpenAI SDK
    sends as its `api_key`), compared in constant time.

    Raises:
        ValueError: the key is empty.
    """

    def __init__(self, key: str) -> None:
        if not key:
            raise ValueError("The API key is empty; give a key of at least one character.")
        self._key = key.encode()
        self.refusal = (
            "This API needs its key: send the header Authorization: Bearer <key>, with the key the server's "
            f"{API_KEY_SETTING} setting holds."
        )

    def __call__(self, headers: Mapping[str, str]) -> bool:
        """Whether the headers carry the key."""
        value = headers.get("authorization") or ""
        if not value.lower().startswith(_BEARER):
            return False
        return hmac.compare_digest(value[len(_BEARER) :].strip().encode(), self._key)


def api_key_auth(environ: Mapping[str, str] | None = None) -> ApiKeyAuth:
    """The API key hook with the key the `AGENT_HOST_API_KEY` setting holds.

    Raises:
        ValueError: the setting is not set, saying how to set it or to turn authentication off.
    """
    key = (os.environ if environ is None else environ).get(API_KEY_SETTING) or ""
    if not key:
        raise ValueError(
            f"The HTTP API needs a key and {API_KEY_SETTING} is not set. Set it to a secret (clients send it as "
            "Authorization: Bearer <key>), give asgi_app(auth=...) a hook of your own, or pass auth=None to serve "
            "without authentication (only behind a gateway that authenticates, or on loopback)."
        )
    return ApiKeyAuth(key)


def asgi_app(
    client: TaskHubGrpcClient,
    worker: AgentWorker,
    *,
    auth: AuthHook | Literal["api_key"] | None = "api_key",
    stream_store: TurnStreamStore | None = None,
    conversation_owners: bool | OwnerHook = False,
) -> Starlette:
    """An ASGI app serving the worker's agents on the function app's routes, paths and bodies (docs/http.md).

    Run it with any ASGI server (`uvicorn.run(app)`), in the worker's process or another on the same task hub.

    Args:
        client: A `TaskHubGrpcClient` (or `DurableTaskSchedulerClient`) on the worker's task hub.
        worker: The `AgentWorker` whose agents are served, with its settings and clock.
        auth: Who may call: "api_key" (the default) requires `Authorization: Bearer <key>` with the key
            `AGENT_HOST_API_KEY` holds; a hook decides from the request's headers; None serves every request.
            `/api/health` is always open, as on Functions.
        stream_store: Where turn streams are read from; None reads the worker's (`AgentWorker.stream_store`).
            Without a store anywhere, a turn's stream is replayed from its record once it has finished.
        conversation_owners: Give each conversation an owner, and let a caller reach only its own (another's is 404,
            a request naming nobody 401), as `AgentFunctionApp(conversation_owners=...)`: True takes the principal
            App Service or Container Apps authentication passes (`X-MS-CLIENT-PRINCIPAL-ID`), a callable names it
            from the request's headers (lower-case names; None for nobody). A request with the `AGENT_HOST_ADMIN_KEY`
            key in `X-Agent-Host-Admin-Key` reaches every conversation (docs/security.md).

    Raises:
        ValueError: `auth` is "api_key" and `AGENT_HOST_API_KEY` is not set; `conversation_owners` is neither a bool
            nor a callable.
    """
    hook = api_key_auth() if auth == "api_key" else auth
    if isinstance(hook, str):
        raise ValueError(f"auth must be 'api_key', a hook from request headers to a bool, or None, not {auth!r}.")
    # Keys in URLs end up in logs, and this host never took one there: the admin key comes in its header only.
    owners = owners_of(conversation_owners, admin_key_header=ADMIN_KEY_HEADER, admin_key_param=None)
    agents = {name: replace(route, http_enabled=True, owners=owners) for name, route in worker.agent_routes.items()}
    clients = TaskHubConversations(client)
    streams = worker.stream_store if stream_store is None else lambda: stream_store
    # The routes' binding argument is unused here: the worker's conversations all go through its one client.
    conversations = Routes(
        agents,
        worker.settings,
        worker.clock,
        streams,
        conversations=lambda _binding, agent: clients.for_agent(agent),
    )
    health = HealthRoute(agents, list)
    table = [
        HttpRoute("api_health", "health", {"GET": health.health}, client=False, auth_level=func.AuthLevel.ANONYMOUS),
        *conversation_routes(conversations),
        conversation_list_route(ConversationListRoute(agents)),
        *openai_routes(OpenAIResponsesRoutes(agents, worker.settings, worker.clock, conversations)),
    ]
    routes = [
        Route(f"{ROUTE_PREFIX}/{route.path}", _endpoint(route, clients, hook), methods=_ALL_METHODS) for route in table
    ]
    if worker.mcp_tools.tools:
        tools = agent_tool_server(
            worker.mcp_tools.tools,
            agents,
            {name: clients.for_agent(agent) for name, agent in agents.items()},
            worker.settings,
            worker.clock,
            TurnsInFlight(streams, worker.settings, worker.clock),
        )
        routes.append(Route(MCP_PATH, _mcp_endpoint(tools, hook), methods=_ALL_METHODS))
    routes.append(Route("/{path:path}", _not_found, methods=_ALL_METHODS))
    return Starlette(routes=routes, middleware=[Middleware(_IgnoreTrailingSlash)])


class _IgnoreTrailingSlash:
    """Serve `/path/` as `/path`, as the Functions host does."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            scope = {**scope, "path": path[:-1]}
        await self._app(scope, receive, send)


def _endpoint(
    route: HttpRoute, clients: TaskHubConversations, hook: AuthHook | None
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one route: the auth hook, then the route's own `endpoint`."""
    guard = hook if route.auth_level != func.AuthLevel.ANONYMOUS else None
    render = route.render_error or render_error

    async def endpoint(request: Request) -> Response:
        refused = _refusal(guard, request, render)
        if refused is not None:
            return refused
        req = await functions_request(request)
        return fastapi_response(await (route.endpoint(req, clients) if route.client else route.endpoint(req)))

    return endpoint


def _mcp_endpoint(server: McpServer, hook: AuthHook | None) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of the MCP tools: the auth hook, then the Streamable HTTP transport."""

    async def endpoint(request: Request) -> Response:
        refused = _refusal(hook, request, render_error)
        if refused is not None:
            return refused
        reply = await streamable_reply(server, request.method, request.url.path, request.headers, request.body)
        return Response(reply.body, status_code=reply.status, headers=reply.headers)

    return endpoint


def _refusal(
    hook: AuthHook | None, request: Request, render: Callable[[AgentHostError], func.HttpResponse]
) -> Response | None:
    """The 401 of a request the hook refuses, rendered as its route renders errors; None when it may be served."""
    if hook is None or hook(request.headers):
        return None
    error = UnauthenticatedError(getattr(hook, "refusal", _HOOK_REFUSAL))
    error.headers = {"WWW-Authenticate": "Bearer"}
    return fastapi_response(render(error))


async def _not_found(request: Request) -> Response:
    """A path no route serves: 404, the JSON error body every error has, naming what this host serves."""
    message = f"No route serves {request.method} {request.url.path} here. {_NOT_SERVED}"
    return fastapi_response(json_response(404, {"error": {"code": "not_found", "message": message}}))
