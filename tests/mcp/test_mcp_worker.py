"""What only the standalone worker's MCP tools have: its switch per worker and per agent, its auth hook (a call
without the API key is refused before anything is signalled, the official client with the key is served), and the
404 of what it does not serve of MCP. What the worker serves alike with the function app runs on both hosts
(`serve_tools` in the other tests here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from apps import make_agent
from chat_clients import ScriptedChatClient
from durabletask.worker import TaskHubGrpcWorker
from mcp import ClientSession
from mcp_harness import MCP_PATH, post_raw, with_session
from tool_results import CONVERSATIONS, texts
from worker_hosting import RunningWorkerHost

from agent_host import OfflineChatClient
from agent_host.worker import AgentWorker, ApiKeyAuth, worker_options

KEY = "mcp-s3cret"
BEARER = {"Authorization": f"Bearer {KEY}"}
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "assistant", "arguments": {"query": "My name is Ada.", "sessionId": "c1"}},
}


@pytest.fixture
def model() -> ScriptedChatClient:
    return ScriptedChatClient()


@pytest.fixture
def keyed(model: ScriptedChatClient) -> Iterator[RunningWorkerHost]:
    running = RunningWorkerHost(lambda: [make_agent(model)], auth=ApiKeyAuth(KEY), enable_mcp_tool_trigger=True)
    yield running
    running.stop()


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key"}, {"x-functions-key": KEY}],
    ids=["none", "wrong", "function-key"],
)
def test_a_call_without_the_api_key_is_401_and_runs_nothing(
    keyed: RunningWorkerHost, model: ScriptedChatClient, headers: dict[str, str]
) -> None:
    refused = post_raw(keyed, MCP_PATH, CALL, headers)

    assert refused.status == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    assert refused.json() == {
        "error": {
            "code": "unauthenticated",
            "message": "This API needs its key: send the header Authorization: Bearer <key>, with the key the "
            "server's AGENT_HOST_API_KEY setting holds.",
        }
    }
    assert keyed.request("GET", f"{CONVERSATIONS.format(agent='assistant')}/c1", headers=BEARER).status == 404
    assert model.calls == []


def test_with_the_key_the_official_client_is_served_and_health_shows_the_tool(
    keyed: RunningWorkerHost, model: ScriptedChatClient
) -> None:
    async def list_and_call(session: ClientSession) -> tuple[list[str], list[str]]:
        listed = await session.list_tools()
        called = await session.call_tool("assistant", {"query": "hello", "sessionId": "c1"})
        return [tool.name for tool in listed.tools], texts(called)

    names, answer = with_session(keyed, list_and_call, headers=BEARER)
    health = keyed.request("GET", "/api/health").json()

    assert names == ["assistant"]
    assert answer[0] == "reply 1: hello"
    assert len(model.calls) == 1
    assert health["agents"] == [
        {"name": "assistant", "type": "Agent", "http_endpoint_enabled": True, "mcp_tool_enabled": True}
    ]


@pytest.mark.parametrize("path", [f"{MCP_PATH}/sse", f"{MCP_PATH}/message?azmcpcs=x"])
def test_the_legacy_sse_transport_is_404_naming_what_the_worker_serves(keyed: RunningWorkerHost, path: str) -> None:
    reply = keyed.request("GET" if path.endswith("sse") else "POST", path, headers=BEARER)

    assert reply.status == 404
    error = reply.json()["error"]
    assert error["code"] == "not_found"
    assert "their MCP tools at POST /runtime/webhooks/mcp (Streamable HTTP)" in error["message"]
    assert "MCP's legacy SSE transport are served by AgentFunctionApp only" in error["message"]


def test_add_agent_decides_per_agent_over_the_workers_setting() -> None:
    def hosted(**options: bool) -> AgentWorker:
        worker = AgentWorker(TaskHubGrpcWorker(host_address="localhost:1", **worker_options()), **options)
        worker.add_agent(make_agent(OfflineChatClient(), "default"))
        worker.add_agent(make_agent(OfflineChatClient(), "opted_out"), enable_mcp_tool_trigger=False)
        worker.add_agent(make_agent(OfflineChatClient(), "opted_in"), enable_mcp_tool_trigger=True)
        return worker

    on, off = hosted(enable_mcp_tool_trigger=True), hosted()

    assert [tool.name for tool in on.mcp_tools.tools] == ["default", "opted_in"]
    assert [tool.name for tool in off.mcp_tools.tools] == ["opted_in"]
    assert {name: route.mcp_enabled for name, route in off.agent_routes.items()} == {
        "default": False,
        "opted_out": False,
        "opted_in": True,
    }
