"""Driving an MCP endpoint with the official MCP SDK client, from synchronous tests: the local host's, or the
standalone worker's ASGI app's.

The host runs in its own thread and loop (`hosting.RunningHost`, `worker_hosting.RunningWorkerHost`); each
`with_session` runs the client on a fresh event loop in the test's thread, initializes a session over Streamable
HTTP (or the legacy SSE transport) and hands it to the test's coroutine. `serve` starts the local host; `serve_tools`
serves agents as tools on each host in turn, for a test of what both must do alike.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.client import HTTPConnection, HTTPResponse
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import mcp.types as types
import pytest
from apps import build_app
from hosting import RunningHost
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from worker_hosting import HttpHost, RunningWorkerHost

from agent_host import HostSettings
from agent_host._streaming.sqlite_store import SqliteStreamStore

T = TypeVar("T")
Transport = Literal["streamable", "sse"]
MCP_PATH = "/runtime/webhooks/mcp"


@asynccontextmanager
async def open_session(
    base_url: str, *, transport: Transport = "streamable", headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized client session with the host's MCP endpoint."""
    if transport == "sse":
        streams = sse_client(f"{base_url}{MCP_PATH}/sse", headers=headers)
        async with streams as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session
        return
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{base_url}{MCP_PATH}", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def base_url(running: HttpHost) -> str:
    """Where the host listens."""
    if isinstance(running, RunningWorkerHost):
        return running.base_url
    assert running.host is not None
    return running.host.base_url


def with_session(
    running: HttpHost,
    use: Callable[[ClientSession], Awaitable[T]],
    *,
    transport: Transport = "streamable",
    headers: dict[str, str] | None = None,
) -> T:
    """Run `use` with an initialized session against the running host and return what it returns."""
    url = base_url(running)

    async def main() -> T:
        async with open_session(url, transport=transport, headers=headers) as session:
            return await use(session)

    try:
        return asyncio.run(main())
    except BaseExceptionGroup as group:
        # The client's task groups wrap what the session raised; a test wants the one error itself.
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions at the bottom of nested exception groups."""
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


def call_tool(running: HttpHost, name: str, arguments: dict[str, Any], **options: Any) -> types.CallToolResult:
    """One tool call in a session of its own, as an MCP client that connects per call would make it."""
    return with_session(running, lambda session: session.call_tool(name, arguments), **options)


def post_raw(
    running: HttpHost, path: str, message: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None
) -> Any:
    """POST a JSON-RPC message (or raw bytes) to an MCP path with the headers a Streamable HTTP client sends."""
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **(headers or {})}
    body = raw if raw is not None else json.dumps(message).encode()
    return running.request("POST", path, headers=sent, raw=body)


@contextmanager
def open_stream(running: RunningHost, path: str, headers: dict[str, str] | None = None) -> Iterator[HTTPResponse]:
    """A GET whose response is read as it arrives (an event stream never ends by itself): status and headers first."""
    assert running.host is not None
    url = urlsplit(running.host.base_url)
    connection = HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request("GET", path, headers=headers or {})
        yield connection.getresponse()
    finally:
        connection.close()


def sse_data(body: bytes) -> list[dict[str, Any]]:
    """The JSON messages of a server-sent event stream's `data:` lines."""
    return [json.loads(line[len("data: ") :]) for line in body.decode().splitlines() if line.startswith("data: ")]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., RunningHost]]:
    """Start the local host for an app of these agents (`build_app` arguments), or for `app`; stopped afterwards."""
    started: list[RunningHost] = []

    def start(*agents: Any, app: Any = None, function_key: str | None = None, **app_kwargs: Any) -> RunningHost:
        factory = (lambda: app) if app is not None else (lambda: build_app(*agents, **app_kwargs))
        running = RunningHost(factory, tmp_path / f"host{len(started)}", function_key)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


# Serves agents as MCP tools: `serve_tools(*agents, settings=None, conversation_owners=False)`, on the host the test
# is parametrized with.
ServeTools = Callable[..., HttpHost]


@pytest.fixture(params=["functions", "worker"])
def serve_tools(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServeTools]:
    """Serve these agents as MCP tools on one of the two hosts: the function app (`enable_mcp_tool_trigger=True`) on
    the local host, or the standalone worker's ASGI app (`AgentWorker(enable_mcp_tool_trigger=True)`) on durabletask's
    in-memory backend, without authentication. A test that takes it runs once on each, with the same assertions. Each
    keeps its turn streams in a SQLite file, as `python -m agent_host serve` does by default, so turns in flight are
    seen (`ifBusy`, cancel)."""
    started: list[HttpHost] = []
    streams = {host: SqliteStreamStore(tmp_path / f"{host}-streams.sqlite3") for host in ("functions", "worker")}

    def start(*agents: Any, settings: HostSettings | None = None, conversation_owners: bool = False) -> HttpHost:
        host: HttpHost
        if request.param == "functions":
            app = functools.partial(
                build_app,
                *agents,
                settings=settings,
                stream_store=streams["functions"],
                enable_mcp_tool_trigger=True,
                conversation_owners=conversation_owners,
            )
            host = RunningHost(app, tmp_path / f"host{len(started)}")
        else:
            host = RunningWorkerHost(
                lambda: list(agents),
                settings=settings,
                stream_store=streams["worker"],
                enable_mcp_tool_trigger=True,
                conversation_owners=conversation_owners,
            )
        started.append(host)
        return host

    yield start
    for host in started:
        host.stop()
    for store in streams.values():
        store.close()
