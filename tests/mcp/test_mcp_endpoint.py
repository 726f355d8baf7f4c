"""The local host's MCP endpoint as the Functions MCP extension serves it: transports, keys and protocol errors.

Raw HTTP where the wire itself is the point (status codes, headers, event framing); the official SDK client over
the legacy SSE transport; and a plain `mcpToolTrigger` function of the user's own, to show the endpoint is the
extension's, not something only our agent tools speak.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.client import IncompleteRead

import azure.durable_functions as df
import pytest
from agent_framework import Message
from aiohttp.test_utils import make_mocked_request
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from hosting import RunningHost
from mcp import ClientSession
from mcp_harness import MCP_PATH, call_tool, open_stream, post_raw, serve, sse_data, with_session
from tool_results import texts

from agent_host import OfflineChatClient
from agent_host._local_host.mcp_endpoint import MAX_OWED_ANSWERS

__all__ = ["serve"]  # the fixture, imported for pytest

Serve = Callable[..., RunningHost]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def agent_host(serve: Serve, **kwargs: object) -> RunningHost:
    return serve(make_agent(OfflineChatClient()), enable_mcp_tool_trigger=True, **kwargs)


def test_initialize_answers_as_one_event_and_issues_a_session_id(serve: Serve) -> None:
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, INITIALIZE)

    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.body.decode().startswith("event: message\ndata: ")
    assert sse_data(reply.body) == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": "2025-03-26",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Azure Functions MCP server", "version": "1.0.0"},
            },
        }
    ]
    assert len(reply.headers["mcp-session-id"]) >= 16


def test_notifications_are_accepted_without_a_body(serve: Serve) -> None:
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    assert (reply.status, reply.body) == (202, b"")


@pytest.mark.parametrize(
    ("message", "raw", "status", "code"),
    [
        (None, b"{not json", 400, -32700),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None, 400, -32600),
        ({"id": 1, "method": "ping"}, None, 400, -32600),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None, 400, -32600),
        ({"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}, None, 400, -32600),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None, 400, -32600),
    ],
)
def test_bodies_that_are_not_one_json_rpc_message_are_refused(
    serve: Serve, message: object, raw: bytes | None, status: int, code: int
) -> None:
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, message, raw=raw)

    assert reply.status == status
    assert reply.json()["error"]["code"] == code


@pytest.mark.parametrize("request_id", [None, 7, 2.5, "r-7"])
def test_a_request_id_may_be_a_string_a_number_or_null_and_comes_back_as_sent(serve: Serve, request_id: object) -> None:
    # JSON-RPC 2.0: an id is a string, a number or null; only a message without one is a notification.
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, {"jsonrpc": "2.0", "id": request_id, "method": "ping"})

    assert reply.status == 200
    assert sse_data(reply.body) == [{"jsonrpc": "2.0", "id": request_id, "result": {}}]


def test_methods_the_extension_does_not_serve_are_not_available(serve: Serve) -> None:
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, {"jsonrpc": "2.0", "id": "r1", "method": "resources/list"})

    assert sse_data(reply.body) == [
        {
            "jsonrpc": "2.0",
            "id": "r1",
            "error": {"code": -32601, "message": "Method 'resources/list' is not available."},
        }
    ]


def test_a_post_must_accept_json_and_event_streams(serve: Serve) -> None:
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, INITIALIZE, headers={"Accept": "application/json"})

    assert reply.status == 406
    assert reply.json()["error"] == {
        "code": -32000,
        "message": "Not Acceptable: Client must accept both application/json and text/event-stream",
    }


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_streamable_http_takes_post_only(serve: Serve, method: str) -> None:
    running = agent_host(serve)

    reply = running.request(method, MCP_PATH)

    assert (reply.status, reply.headers["allow"]) == (405, "POST")
    assert reply.json()["error"]["code"] == "method_not_allowed"


def test_a_malformed_session_id_is_invalid_client_state(serve: Serve) -> None:
    running = agent_host(serve)

    reply = post_raw(running, MCP_PATH, INITIALIZE, headers={"Mcp-Session-Id": "has spaces in it"})

    assert (reply.status, reply.json()["error"]["message"]) == (400, "Invalid client state.")


def test_the_tool_function_gets_the_extensions_invocation_context(serve: Serve) -> None:
    seen: list[dict] = []
    app = build_app(make_agent(OfflineChatClient()))

    @app.function_name("echo_context")
    @app.mcp_tool_trigger(arg_name="context", tool_name="echo", description="Echoes.", tool_properties="[]")
    def echo(context: str) -> str:
        seen.append(json.loads(context))
        return "echoed"

    running = serve(app=app)

    result = with_session(
        running, lambda session: session.call_tool("echo", {"x": 1}), headers={"X-Caller": "test-suite"}
    )

    assert texts(result) == ["echoed"]
    context = seen[0]
    assert (context["name"], context["arguments"]) == ("echo", {"x": 1})
    assert context["transport"]["name"] == "http-streamable"
    assert context["sessionid"] == context["transport"]["sessionId"]
    headers = {name.lower(): value for name, value in context["transport"]["properties"]["headers"].items()}
    assert headers["x-caller"] == "test-suite"


def test_a_tool_function_that_raises_is_the_extensions_generic_tool_error(serve: Serve) -> None:
    app = df.DFApp()

    @app.function_name("boom")
    @app.mcp_tool_trigger(arg_name="context", tool_name="boom", tool_properties="[]")
    def boom(context: str) -> str:
        raise RuntimeError("internal detail that must not reach the client")

    running = serve(app=app)

    result = call_tool(running, "boom", {})

    assert result.is_error is True
    assert texts(result) == ["An error occurred invoking 'boom'."]


def test_the_official_client_works_over_the_legacy_sse_transport(serve: Serve) -> None:
    running = agent_host(serve)

    async def remember(session: ClientSession) -> list[str]:
        tools = await session.list_tools()
        await session.call_tool("assistant", {"query": "My name is Ada.", "sessionId": "sse-1"})
        answer = await session.call_tool("assistant", {"query": "What is my name?", "sessionId": "sse-1"})
        return [tool.name for tool in tools.tools] + texts(answer)

    assert with_session(running, remember, transport="sse")[:2] == ["assistant", "[offline model] Your name is Ada."]


def test_the_sse_message_endpoint_needs_an_open_session(serve: Serve) -> None:
    running = agent_host(serve)

    missing = post_raw(running, f"{MCP_PATH}/message", INITIALIZE)
    unknown = post_raw(running, f"{MCP_PATH}/message?azmcpcs=nobody", INITIALIZE)

    assert (missing.status, missing.json()["error"]["code"]) == (400, "missing_session")
    assert (unknown.status, unknown.json()["error"]["code"]) == (400, "unknown_session")


@pytest.mark.parametrize("path", [MCP_PATH, f"{MCP_PATH}/message?azmcpcs=x"])
def test_with_a_function_key_every_mcp_post_needs_it(serve: Serve, path: str) -> None:
    running = agent_host(serve, function_key="s3cret")

    missing = post_raw(running, path, INITIALIZE)
    wrong = post_raw(running, path, INITIALIZE, headers={"x-functions-key": "no"})

    assert (missing.status, missing.json()["error"]["code"]) == (401, "unauthorized")
    assert missing.json()["error"]["message"].startswith("The MCP endpoint needs the function key")
    assert wrong.status == 401


@pytest.mark.parametrize("headers", [{}, {"x-functions-key": "no"}])
def test_with_a_function_key_the_sse_stream_needs_it(serve: Serve, headers: dict[str, str]) -> None:
    running = agent_host(serve, function_key="s3cret")

    with open_stream(running, f"{MCP_PATH}/sse", headers) as response:
        status, body = response.status, json.loads(response.read())

    assert (status, body["error"]["code"]) == (401, "unauthorized")


def test_the_sse_stream_names_its_message_endpoint_with_the_key_it_was_opened_with(serve: Serve) -> None:
    running = agent_host(serve, function_key="s3cret")

    with open_stream(running, f"{MCP_PATH}/sse", {"x-functions-key": "s3cret"}) as response:
        event, data = response.readline(), response.readline()

    assert event == b"event: endpoint\n"
    assert re.fullmatch(rb"data: message\?azmcpcs=[0-9a-f]{32}&code=s3cret\n", data)


def test_stopping_the_host_ends_open_sse_streams_at_once(serve: Serve) -> None:
    running = agent_host(serve)

    with open_stream(running, f"{MCP_PATH}/sse") as response:
        assert response.readline() == b"event: endpoint\n"
        started = time.monotonic()
        running.stop()
        with contextlib.suppress(IncompleteRead):  # a stream cut off instead of ended is timed all the same
            response.read()
        took = time.monotonic() - started

    # Without ending the streams first, the listener would wait out its 5 s shutdown grace for each one.
    assert took < 2.5


@pytest.mark.parametrize("transport", ["streamable", "sse"])
def test_with_the_key_in_the_header_both_transports_serve_the_client(serve: Serve, transport: str) -> None:
    running = agent_host(serve, function_key="s3cret")

    result = with_session(
        running,
        lambda session: session.call_tool("assistant", {"query": "My name is Ada.", "sessionId": "k1"}),
        transport=transport,  # type: ignore[arg-type]
        headers={"x-functions-key": "s3cret"},
    )

    assert texts(result)[0].startswith("[offline model] Noted")


def test_the_key_may_come_as_the_code_query_parameter(serve: Serve) -> None:
    running = agent_host(serve, function_key="s3cret")

    reply = post_raw(running, f"{MCP_PATH}?code=s3cret", INITIALIZE)

    assert reply.status == 200
    assert sse_data(reply.body)[0]["result"]["protocolVersion"] == "2025-03-26"


def test_without_a_key_only_loopback_callers_are_served(serve: Serve) -> None:
    running = agent_host(serve)
    assert running.host is not None
    remote = make_mocked_request(
        "POST", MCP_PATH, transport=RemotePeer("192.0.2.10"), headers={"Accept": "application/json, text/event-stream"}
    )

    reply = running.call(running.host._server.handle(remote))

    assert reply.status == 403
    assert json.loads(reply.text)["error"]["code"] == "forbidden"


def test_an_app_without_mcp_tools_has_no_mcp_endpoint(serve: Serve) -> None:
    running = serve(make_agent(OfflineChatClient()))

    reply = post_raw(running, MCP_PATH, INITIALIZE)

    assert (reply.status, reply.json()["error"]["code"]) == (404, "not_found")


class RemotePeer:
    """A transport whose peer is a remote address (what aiohttp reads `request.remote` from)."""

    def __init__(self, address: str) -> None:
        self._address = address

    def get_extra_info(self, name: str, default: object = None) -> object:
        return (self._address, 50000) if name == "peername" else default

    def is_closing(self) -> bool:
        return False


def test_an_sse_session_that_reads_none_of_its_answers_is_closed_with_a_clear_error(serve: Serve) -> None:
    gate = threading.Event()  # every tool call waits: its answer stays owed
    client = ScriptedChatClient(lambda messages, _: gate.wait(10) and Message("assistant", ["ok"]))
    running = serve(make_agent(client), enable_mcp_tool_trigger=True)
    call = {"name": "assistant", "arguments": {"query": "hello", "sessionId": "c1"}}
    try:
        with open_stream(running, f"{MCP_PATH}/sse") as stream:
            assert stream.readline() == b"event: endpoint\n"
            endpoint = f"{MCP_PATH}/{stream.readline().decode().removeprefix('data: ').strip()}"
            stream.readline()
            replies = [
                post_raw(running, endpoint, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call})
                for n in range(MAX_OWED_ANSWERS + 2)
            ]
            rest = stream.read()
    finally:
        gate.set()

    statuses = [reply.status for reply in replies]
    assert statuses == [202] * MAX_OWED_ANSWERS + [400, 400]
    closed = [reply.json()["error"] for reply in replies[MAX_OWED_ANSWERS:]]
    assert [error["code"] for error in closed] == ["session_closed", "session_closed"]
    assert "was closed: it was owed 64 answers its event stream had not taken" in closed[0]["message"]
    assert closed[0] == closed[1]  # later messages are told the same, not "no active session"
    assert rest.startswith(b": session closed: it was owed 64 answers") and b"event: message" not in rest


def test_an_sse_client_that_reads_its_answers_keeps_its_session_past_the_bound(serve: Serve) -> None:
    running = agent_host(serve)

    async def ping_often(session: ClientSession) -> int:
        for _ in range(MAX_OWED_ANSWERS * 2):
            await session.send_ping()
        return len((await session.list_tools()).tools)

    assert with_session(running, ping_often, transport="sse") == 1
