"""Driving the local host's MCP endpoint with the official MCP SDK client, from synchronous tests.

The host runs in its own thread and loop (`hosting.RunningHost`); each `with_session` runs the client on a fresh
event loop in the test's thread, initializes a session over Streamable HTTP (or the legacy SSE transport) and hands
it to the test's coroutine.
"""

from __future__ import annotations

import asyncio
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


def with_session(
    running: RunningHost,
    use: Callable[[ClientSession], Awaitable[T]],
    *,
    transport: Transport = "streamable",
    headers: dict[str, str] | None = None,
) -> T:
    """Run `use` with an initialized session against the running host and return what it returns."""
    assert running.host is not None
    base_url = running.host.base_url

    async def main() -> T:
        async with open_session(base_url, transport=transport, headers=headers) as session:
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


def call_tool(running: RunningHost, name: str, arguments: dict[str, Any], **options: Any) -> types.CallToolResult:
    """One tool call in a session of its own, as an MCP client that connects per call would make it."""
    return with_session(running, lambda session: session.call_tool(name, arguments), **options)


def post_raw(
    running: RunningHost, path: str, message: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None
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
