"""The app's front doors without a host: the real `AgentFunctionApp`, its HTTP functions called directly with
`azure.functions.HttpRequest`s, and its conversations in memory, each operation run by the app's own entity function.

`MemoryConversationClient` honours the `ConversationClient` contract: `signal` runs the operation on the conversation
entity (the real entity function, fed the host's batch JSON from `batches.py`) before it returns, and `read` decodes
the state it committed. A test of route validation, error bodies, rendering, AG-UI, the Responses API, MCP tool calls
or the inspector's views runs here (tests/front_ends/); tests of the durable engine stay on the local host.

Not modelled: function keys and auth levels (every request is let in), queued turns (an operation runs when it is
signalled, so a turn is never seen pending), idle expiry (the watch does nothing), importing published conversations,
and the Functions durable client itself: a route that asks it directly (listing conversations, workflows, the
inspector's runs) gets a binding that reaches nothing, and answers `storage_unavailable`.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import re
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import azure.functions as func
import httpx
import mcp.types as types
from azure.functions.decorators.http import HttpTrigger
from batches import EntityDriver
from hosting import Reply, encoded_request
from mcp.shared.exceptions import MCPError

from agent_host import AgentFunctionApp, HostSettings
from agent_host._clock import Clock
from agent_host._contract import AgentRoute
from agent_host._conversation.state import decode_state
from agent_host._conversation.view import ConversationView
from agent_host._conversation_client.waits import ReadBackWaits
from agent_host._http.event_stream import content_type
from agent_host._local_host.direct_invoker import DirectInvoker
from agent_host._local_host.mcp_tools import discover_mcp_tools
from agent_host._mcp_extension.protocol import Caller, McpServer
from agent_host._owners import FUNCTION_KEY_HEADER
from agent_host.worker._conversation_client import NoExpiryWatch

BASE_URL = "http://memory.test"
ROUTE_PREFIX = "/api/"
# A durable client binding whose endpoints nothing listens on (port 9, discard): a durable call that goes around the
# conversation client fails at once instead of reaching some host.
UNREACHABLE = "http://127.0.0.1:9/runtime/webhooks/durabletask"
UNREACHABLE_BINDING = json.dumps(
    {"taskHubName": "memory", "creationUrls": {}, "managementUrls": {}, "rpcBaseUrl": f"{UNREACHABLE}/"}
)
_ROUTE_PARAMETER = re.compile(r"\{(\w+)\}")

HttpFunction = Callable[..., Awaitable[func.HttpResponse]]
T = TypeVar("T")


class MemoryConversations:
    """Every conversation of an app as the host would keep it: the stored state text of each entity, in a dict.

    Operations on one entity run one at a time, in the order they are signalled, as the host runs them.

    Args:
        functions: The app's functions, as `get_functions()` indexed them; its entity functions run the operations.
    """

    def __init__(self, functions: Callable[[], list[func.Function]]) -> None:
        self._functions = functions
        self.drivers: dict[tuple[str, str], EntityDriver] = {}
        self._lock = threading.Lock()
        self._entity_locks: dict[tuple[str, str], threading.Lock] = {}

    def for_agent(self, agent: AgentRoute) -> MemoryConversationClient:
        """The agent's conversations."""
        return MemoryConversationClient(self, agent)

    def state(self, entity_name: str, conversation_id: str) -> str | None:
        """The entity's stored state text, or None when it does not exist."""
        driver = self.drivers.get((entity_name, conversation_id))
        return None if driver is None else driver.state

    async def run(self, entity_name: str, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Run one operation on the entity in a batch of its own, off the event loop, and commit what it returns."""
        await asyncio.to_thread(self._run, entity_name, conversation_id, operation, payload)

    def _run(self, entity_name: str, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        key = (entity_name, conversation_id)
        with self._lock:
            driver = self.drivers.get(key) or EntityDriver(self._entity_function(entity_name), entity_name, key[1])
            self.drivers[key] = driver
            entity_lock = self._entity_locks.setdefault(key, threading.Lock())
        with entity_lock:
            driver.send((operation, payload))

    def _entity_function(self, entity_name: str) -> Callable[[str], str]:
        for function in self._functions():
            if function.get_function_name() == entity_name:
                return function.get_user_function()
        raise LookupError(f"the app has no entity function {entity_name!r}")


class MemoryConversationClient(ReadBackWaits):
    """One agent's conversations in `MemoryConversations`: the `ConversationClient` a `MemoryFunctionApp` gives every
    front end in place of the durable one."""

    def __init__(self, conversations: MemoryConversations, agent: AgentRoute) -> None:
        self._conversations = conversations
        self._agent = agent

    @property
    def agent_name(self) -> str:
        """The agent whose conversations these are."""
        return self._agent.name

    async def signal(self, conversation_id: str, operation: str, payload: dict[str, Any]) -> None:
        """Run the operation on the conversation's entity; it has run when this returns."""
        await self._conversations.run(self._agent.entity_name, conversation_id, operation, payload)

    async def read(self, conversation_id: str) -> ConversationView | None:
        """The conversation's validated state, or None when its entity does not exist."""
        stored = self._conversations.state(self._agent.entity_name, conversation_id)
        return None if stored is None else ConversationView(decode_state(stored))

    async def history_to_import(self, conversation_id: str, now_ms: int) -> dict[str, Any] | None:
        """None: no published conversations are kept in memory."""
        return None

    async def may_hold_queued_turns(self, conversation_id: str) -> bool:
        """False: an operation has run when its signal returns, so nothing is ever on its way."""
        return False

    def watch_expiry(self, conversation_id: str, clock: Clock) -> NoExpiryWatch:
        """A watch that does nothing: idle expiry needs the durable engine."""
        return NoExpiryWatch()


class MemoryFunctionApp(AgentFunctionApp):
    """The real `AgentFunctionApp`, its conversation client factory substituted by one on `MemoryConversations`, and
    a way to call its HTTP functions as the Functions host would, without one.

    Takes `AgentFunctionApp`'s arguments.
    """

    # Where a request presents the admin key (`AGENT_HOST_ADMIN_KEY`) when conversations have owners: the function key.
    admin_key_header = FUNCTION_KEY_HEADER

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conversations = MemoryConversations(lambda: self.indexed_functions)

    @functools.cached_property
    def indexed_functions(self) -> list[func.Function]:
        """The app's functions, indexed once, when first called (the SDK refuses to index an app twice)."""
        return self.get_functions()

    def _conversation_client(self, binding: Any, agent: AgentRoute) -> MemoryConversationClient:
        """Every front end's conversations, in memory (the binding is never used)."""
        return self.conversations.for_agent(agent)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        """One request, as `hosting.RunningHost.request` sends it: `body` as JSON, or `raw` bytes as they are."""
        data, sent_headers = encoded_request(body, headers, raw)
        return asyncio.run(self.serve(method, path, sent_headers, data or b""))

    async def serve(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Call the HTTP function whose route template matches `path` with the request the host would build.

        A path no function serves is 404 with an empty body, as the Functions host answers it.
        """
        url = urlsplit(path)
        match = self._function_for(url.path)
        if match is None:
            return Reply(404, {}, b"")
        function, route_params, takes_client = match
        req = func.HttpRequest(
            method.upper(),
            f"{BASE_URL}{path}",
            headers=dict(headers),
            params=dict(parse_qsl(url.query)),
            route_params=route_params,
            body=body,
        )
        response = await (function(req=req, client=UNREACHABLE_BINDING) if takes_client else function(req=req))
        return _reply(response)

    def transport(self) -> MemoryTransport:
        """An httpx transport (sync and async) that sends every request to `serve`, for real clients on this app:
        `httpx.Client(transport=app.transport())`, or the `http_client` of an OpenAI or AG-UI client."""
        return MemoryTransport(self)

    def _function_for(self, path: str) -> tuple[HttpFunction, dict[str, str], bool] | None:
        """The HTTP function serving `path`, its route parameters (decoded, as the host decodes them), and whether it
        takes the durable client."""
        if not path.startswith(ROUTE_PREFIX):
            return None
        route_path = path[len(ROUTE_PREFIX) :].rstrip("/")
        for function in self.indexed_functions:
            trigger = function.get_trigger()
            if not isinstance(trigger, HttpTrigger):
                continue
            found = _route_pattern(str(trigger.route)).fullmatch(route_path)
            if found is not None:
                takes_client = any(binding.type == "durableClient" for binding in function.get_bindings())
                params = {name: unquote(value) for name, value in found.groupdict().items()}
                return function.get_user_function(), params, takes_client
        return None


class MemoryTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Sends an httpx client's requests to a `MemoryFunctionApp` instead of the network."""

    def __init__(self, app: MemoryFunctionApp) -> None:
        self._app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Serve one request of a sync client, on an event loop of its own."""
        request.read()  # its body, read here: a sync client's stream cannot be read on the loop
        return asyncio.run(self.handle_async_request(request))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Serve one request of an async client."""
        body = await request.aread()
        reply = await self._app.serve(request.method, request.url.raw_path.decode(), dict(request.headers), body)
        return httpx.Response(reply.status, headers=reply.headers, content=reply.body)


class MemoryMcpSession:
    """An MCP client session's requests answered by the app's tool functions as the Functions MCP extension answers
    them: the local host's stand-in for the extension (`_mcp_extension/protocol.py`), called directly, without its
    HTTP endpoint or any host. Its methods answer as `mcp.ClientSession`'s do.

    Args:
        app: The app whose `mcpToolTrigger` functions serve the tools.
        headers: The HTTP headers the calls arrive with (names in lower case), as the extension hands them on.
    """

    def __init__(self, app: MemoryFunctionApp, headers: Mapping[str, str] | None = None) -> None:
        functions = app.indexed_functions
        tools = discover_mcp_tools(functions, DirectInvoker(functions, why="in memory"), lambda _: UNREACHABLE_BINDING)
        self._server = McpServer(tools)
        lowered = {name.lower(): value for name, value in (headers or {}).items()}
        self._caller = Caller("http-streamable", uuid.uuid4().hex, lowered)
        self._ids = itertools.count(1)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call a tool, as `ClientSession.call_tool`."""
        result = await self._request("tools/call", {"name": name, "arguments": arguments})
        return types.CallToolResult.model_validate(result)

    async def list_tools(self) -> types.ListToolsResult:
        """List the tools, as `ClientSession.list_tools`."""
        return types.ListToolsResult.model_validate(await self._request("tools/list", {}))

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one JSON-RPC request.

        Raises:
            MCPError: the server answered with an error, as the SDK client raises it.
        """
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        answer = await self._server.answer(message, self._caller)
        assert answer is not None
        if "error" in answer:
            raise MCPError(answer["error"]["code"], answer["error"]["message"])
        return answer["result"]


def with_mcp_session(
    app: MemoryFunctionApp,
    use: Callable[[MemoryMcpSession], Coroutine[Any, Any, T]],
    *,
    headers: dict[str, str] | None = None,
) -> T:
    """Run `use` with a session on the app's tools and return what it returns (`mcp_harness.with_session` on the
    local host)."""
    return asyncio.run(use(MemoryMcpSession(app, headers)))


def call_mcp_tool(
    app: MemoryFunctionApp, name: str, arguments: dict[str, Any], *, headers: dict[str, str] | None = None
) -> types.CallToolResult:
    """One tool call in a session of its own (`mcp_harness.call_tool` on the local host)."""
    return with_mcp_session(app, lambda session: session.call_tool(name, arguments), headers=headers)


def memory_app(*agents: Any, settings: HostSettings | None = None, **kwargs: Any) -> MemoryFunctionApp:
    """A `MemoryFunctionApp` around `agents`, as `apps.build_app` builds an `AgentFunctionApp`."""
    return MemoryFunctionApp(agents=list(agents), settings=settings or HostSettings(), **kwargs)


def _route_pattern(template: str) -> re.Pattern[str]:
    """A route template's regular expression: each `{name}` one path segment."""
    parts = _ROUTE_PARAMETER.split(template)
    pattern = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts))
    return re.compile(pattern)


def _reply(response: func.HttpResponse) -> Reply:
    """The function's response as the caller receives it: its own headers, and a content type from its mimetype."""
    headers = {name.lower(): value for name, value in response.headers.items()}
    if "content-type" not in headers and response.mimetype:
        headers["content-type"] = content_type(response.mimetype, response.charset)
    return Reply(response.status_code, headers, response.get_body())
