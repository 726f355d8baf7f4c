"""The standalone worker's HTTP API in this process: its auth hook, what it does not serve, and a turn as an event
stream. The HTTP contract it shares with the function app runs on both hosts (tests/e2e/test_http_contract.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from apps import make_agent
from streams import parse_sse
from worker_hosting import RunningWorkerHost

from agent_host import OfflineChatClient
from agent_host.worker import API_KEY_SETTING, AgentWorker, ApiKeyAuth, asgi_app

BASE = "/api/agents/assistant/conversations"
KEY = "s3cret-key"
BEARER = {"Authorization": f"Bearer {KEY}"}
KEY_REFUSAL = {
    "error": {
        "code": "unauthenticated",
        "message": "This API needs its key: send the header Authorization: Bearer <key>, with the key the server's "
        "AGENT_HOST_API_KEY setting holds.",
    }
}


def offline_agents() -> list:
    return [make_agent(OfflineChatClient())]


@pytest.fixture
def keyed() -> Iterator[RunningWorkerHost]:
    running = RunningWorkerHost(offline_agents, auth=ApiKeyAuth(KEY))
    yield running
    running.stop()


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": KEY}, {"X-Functions-Key": KEY}],
    ids=["none", "wrong", "not-bearer", "function-key"],
)
def test_a_request_without_the_key_is_401_with_the_json_error_and_nothing_runs(
    keyed: RunningWorkerHost, headers: dict[str, str]
) -> None:
    refused = keyed.request("POST", f"{BASE}/c1/turns", {"message": "My name is Ada."}, headers=headers)

    assert refused.status == 401
    assert refused.json() == KEY_REFUSAL
    assert refused.headers["www-authenticate"] == "Bearer"
    # Nothing was signalled: the conversation does not exist.
    assert keyed.request("GET", f"{BASE}/c1", headers=BEARER).status == 404


def test_with_the_key_turns_recall_and_health_needs_none(keyed: RunningWorkerHost) -> None:
    keyed.request("POST", f"{BASE}/c1/turns", {"message": "My name is Ada."}, headers=BEARER)
    second = keyed.request("POST", f"{BASE}/c1/turns", {"message": "What is my name?"}, headers=BEARER)
    health = keyed.request("GET", "/api/health")

    assert second.status == 200
    assert second.json()["text"] == "[offline model] Your name is Ada."
    assert health.status == 200 and health.json()["agents"][0]["name"] == "assistant"


def test_an_openai_route_refuses_in_the_responses_api_shape(keyed: RunningWorkerHost) -> None:
    refused = keyed.request("POST", "/api/openai/v1/responses", {"model": "assistant", "input": "hi"})

    assert refused.status == 401
    assert refused.json() == {
        "error": {
            "message": KEY_REFUSAL["error"]["message"],
            "type": "invalid_request_error",
            "param": None,
            "code": "unauthenticated",
        }
    }


def test_a_hook_of_the_apps_own_decides_from_the_headers() -> None:
    seen: list[Mapping[str, str]] = []

    def only_team_a(headers: Mapping[str, str]) -> bool:
        seen.append(headers)
        return headers.get("x-team") == "a"

    running = RunningWorkerHost(offline_agents, auth=only_team_a)
    try:
        allowed = running.request("POST", f"{BASE}/c1/turns", {"message": "hi"}, headers={"X-Team": "a"})
        refused = running.request("POST", f"{BASE}/c1/turns", {"message": "hi"}, headers={"X-Team": "b"})
    finally:
        running.stop()

    assert allowed.status == 200
    assert refused.status == 401
    assert refused.json() == {
        "error": {
            "code": "unauthenticated",
            "message": "The app's auth hook refused this request. Send the credentials the app's auth hook checks.",
        }
    }
    assert [headers.get("x-team") for headers in seen] == ["a", "b"]


def test_the_default_auth_needs_the_api_key_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_SETTING, raising=False)
    from durabletask.client import TaskHubGrpcClient
    from durabletask.worker import TaskHubGrpcWorker

    from agent_host.worker import worker_options

    hosted = AgentWorker(TaskHubGrpcWorker(host_address="localhost:1", **worker_options()), offline_agents())
    client = TaskHubGrpcClient(host_address="localhost:1")
    try:
        with pytest.raises(ValueError) as refused:
            asgi_app(client, hosted)
        monkeypatch.setenv(API_KEY_SETTING, KEY)
        app = asgi_app(client, hosted)
    finally:
        client.close()

    assert str(refused.value) == (
        "The HTTP API needs a key and AGENT_HOST_API_KEY is not set. Set it to a secret (clients send it as "
        "Authorization: Bearer <key>), give asgi_app(auth=...) a hook of your own, or pass auth=None to serve without "
        "authentication (only behind a gateway that authenticates, or on loopback)."
    )
    assert app.routes  # built once the setting holds a key


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/agents/assistant"),
        ("POST", "/api/workflows/w/runs"),
        ("GET", "/api/inspector"),
        ("POST", "/runtime/webhooks/mcp"),
        ("GET", "/nothing"),
    ],
)
def test_a_route_the_worker_does_not_serve_is_404_naming_what_it_serves(method: str, path: str) -> None:
    running = RunningWorkerHost(offline_agents)
    try:
        reply = running.request(method, path)
    finally:
        running.stop()

    assert reply.status == 404
    error = reply.json()["error"]
    assert error["code"] == "not_found"
    assert error["message"].startswith(f"No route serves {method} {path} here. The standalone worker serves ")
    assert "served by AgentFunctionApp only (docs/standalone-worker.md)" in error["message"]


def test_a_turn_asked_for_as_an_event_stream_ends_with_the_turn_body() -> None:
    running = RunningWorkerHost(offline_agents)
    try:
        reply = running.request(
            "POST", f"{BASE}/c1/turns", {"message": "hello"}, headers={"Accept": "text/event-stream"}
        )
        turn_id = reply.headers["location"].rsplit("/", 1)[1]
        again = running.request("GET", f"{BASE}/c1/turns/{turn_id}/stream", headers={"Last-Event-ID": "1"})
    finally:
        running.stop()

    assert reply.status == 200
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    events = parse_sse(reply.body)
    assert events[0].event == "turn.started"
    assert events[-1].event == "turn.completed"
    assert events[-1].data["turnId"] == turn_id
    assert events[-1].data["text"] == '[offline model] You said: "hello". (0 earlier messages in this conversation.)'
    # Read again after the first event: the same events, under the same ids.
    assert [(e.id, e.event) for e in parse_sse(again.body)] == [(e.id, e.event) for e in events[1:]]
