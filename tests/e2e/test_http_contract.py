"""The HTTP contract end to end, on both hosts of the HTTP API: the function app's real HTTP triggers and durable
client on the local host, and the standalone worker's ASGI app on durabletask (the `serve` fixture)."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
from apps import make_agent
from chat_clients import FailingChatClient, GatedChatClient, ScriptedChatClient
from hosting import Reply
from worker_hosting import HttpHost, Serve

from agent_host import OfflineChatClient

BASE = "/api/agents/assistant/conversations"
SETTLE_SECONDS = 60.0


def offline_agent():
    return make_agent(OfflineChatClient())


@pytest.fixture
def host(serve: Serve) -> HttpHost:
    return serve(offline_agent)


def settled(host: HttpHost, path: str) -> Reply:
    """The turn at `path` once it is no longer pending (202)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    reply = host.request("GET", path)
    while reply.status == 202 and time.monotonic() < deadline:
        time.sleep(0.02)
        reply = host.request("GET", path)
    return reply


def test_health_lists_the_agents(host: HttpHost) -> None:
    reply = host.request("GET", "/api/health")

    assert reply.status == 200
    assert reply.json() == {
        "status": "healthy",
        "agents": [{"name": "assistant", "type": "Agent", "http_endpoint_enabled": True, "mcp_tool_enabled": False}],
        "agent_count": 1,
        "workflows": [],
    }


def test_a_later_turn_recalls_an_earlier_one(host: HttpHost) -> None:
    first = host.request("POST", f"{BASE}/c1/turns", {"message": "My name is Ada."})
    second = host.request("POST", f"{BASE}/c1/turns", {"message": "What is my name?"})

    assert first.status == 200 and first.json()["status"] == "completed"
    assert second.status == 200
    body = second.json()
    assert body["conversationId"] == "c1"
    assert "Ada" in body["text"] and body["text"].startswith("[offline model]")
    assert body["messages"][0]["role"] == "assistant"
    assert body["usage"]["input_token_count"] > 0


def test_plain_text_body_is_a_message(host: HttpHost) -> None:
    host.request(
        "POST", f"{BASE}/c2/turns", raw=b"My favourite color is green.", headers={"Content-Type": "text/plain"}
    )
    reply = host.request(
        "POST", f"{BASE}/c2/turns", raw=b"What is my favourite color?", headers={"Content-Type": "text/plain"}
    )

    assert reply.status == 200
    assert "green" in reply.json()["text"]


def test_not_waiting_returns_202_with_a_location_to_poll(host: HttpHost) -> None:
    reply = host.request("POST", f"{BASE}/c3/turns", {"message": "hello", "wait": False})

    assert reply.status == 202
    body = reply.json()
    assert body["status"] == "pending"
    location = reply.headers["location"]
    assert location.endswith(f"/api/agents/assistant/conversations/c3/turns/{body['turnId']}")
    polled = settled(host, urlsplit(location).path)
    assert polled.status == 200
    assert polled.json()["text"] == '[offline model] You said: "hello". (0 earlier messages in this conversation.)'


def test_conversation_and_messages_in_order(host: HttpHost) -> None:
    host.request("POST", f"{BASE}/c4/turns", {"message": "one"})
    host.request("POST", f"{BASE}/c4/turns", {"message": "two"})

    conversation = host.request("GET", f"{BASE}/c4")
    messages = host.request("GET", f"{BASE}/c4/messages")

    assert conversation.status == 200
    summary = conversation.json()
    assert summary["agent"] == "assistant" and summary["messageCount"] == 4 and summary["turnCount"] == 2
    assert summary["stateBytes"] > 0 and summary["retention"]["mode"] == "auto"
    listed = messages.json()["messages"]
    assert [(m["role"], m["text"][:18]) for m in listed] == [
        ("user", "one"),
        ("assistant", "[offline model] Yo"),
        ("user", "two"),
        ("assistant", "[offline model] Yo"),
    ]
    assert all(m["messageId"] and m["createdAt"].endswith("Z") for m in listed)
    # The agent's name is implied in storage, and still shown on each of its messages.
    assert [m.get("authorName") for m in listed] == [None, "assistant", None, "assistant"]


def test_a_trailing_slash_reaches_the_same_route(host: HttpHost) -> None:
    host.request("POST", f"{BASE}/c6/turns/", {"message": "one"})

    reply = host.request("GET", f"{BASE}/c6/")

    assert reply.status == 200
    assert reply.json()["turnCount"] == 1


def test_delete_removes_the_conversation(host: HttpHost) -> None:
    host.request("POST", f"{BASE}/c5/turns", {"message": "remember me"})

    deleted = host.request("DELETE", f"{BASE}/c5")

    assert deleted.status == 204
    assert host.request("GET", f"{BASE}/c5").json()["error"]["code"] == "conversation_not_found"
    assert host.request("GET", f"{BASE}/c5").status == 404


@pytest.mark.parametrize(
    ("method", "path", "body", "raw", "headers", "status", "code"),
    [
        ("POST", "/api/agents/nobody/conversations/c1/turns", {"message": "hi"}, None, None, 404, "agent_not_found"),
        ("POST", f"{BASE}/bad@id/turns", {"message": "hi"}, None, None, 400, "invalid_conversation_id"),
        ("POST", f"{BASE}/{'x' * 129}/turns", {"message": "hi"}, None, None, 400, "invalid_conversation_id"),
        ("POST", f"{BASE}/c1/turns", {}, None, None, 400, "missing_message"),
        ("POST", f"{BASE}/c1/turns", {"message": "   "}, None, None, 400, "missing_message"),
        ("POST", f"{BASE}/c1/turns", {"message": 42}, None, None, 400, "invalid_body"),
        (
            "POST",
            f"{BASE}/c1/turns",
            None,
            b'{"message": "hi"',
            {"Content-Type": "application/json"},
            400,
            "invalid_json",
        ),
        ("POST", f"{BASE}/c1/turns", {"message": "x" * 40000}, None, None, 413, "message_too_large"),
        ("GET", f"{BASE}/never/turns/0000000000000000000", None, None, None, 404, "turn_not_found"),
        ("GET", f"{BASE}/never", None, None, None, 404, "conversation_not_found"),
        ("PUT", f"{BASE}/c1/turns", {"message": "hi"}, None, None, 405, "method_not_allowed"),
    ],
)
def test_bad_requests_get_a_json_error(host, method, path, body, raw, headers, status, code) -> None:
    reply = host.request(method, path, body, raw=raw, headers=headers)

    assert reply.status == status
    assert reply.json()["error"]["code"] == code
    assert reply.json()["error"]["message"]


def test_a_failed_model_turn_is_a_5xx_with_the_error(serve: Serve) -> None:
    reply = serve(lambda: make_agent(FailingChatClient())).request("POST", f"{BASE}/c1/turns", {"message": "hi"})

    assert reply.status == 502
    assert reply.json()["status"] == "failed"
    assert reply.json()["error"]["code"] == "turn_failed"


def test_restart_keeps_the_conversation(serve: Serve) -> None:
    running = serve(offline_agent)
    running.request("POST", f"{BASE}/c1/turns", {"message": "My name is Grace."})
    running.restart()
    reply = running.request("POST", f"{BASE}/c1/turns", {"message": "What is my name?"})

    assert reply.json()["text"] == "[offline model] Your name is Grace."


def test_scripted_model_sees_the_whole_history_over_http(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(lambda: make_agent(client))
    for text in ["a", "b", "c"]:
        running.request("POST", f"{BASE}/c1/turns", {"message": text})

    assert [m.text for m in client.calls[-1]] == ["a", "reply 1: a", "b", "reply 2: b", "c"]


def test_a_failed_turn_reads_back_as_a_failed_body_with_200(serve: Serve) -> None:
    running = serve(lambda: make_agent(FailingChatClient()))
    started = running.request("POST", f"{BASE}/c1/turns", {"message": "hi", "wait": False})
    polled = settled(running, urlsplit(started.headers["location"]).path)

    assert started.status == 202
    assert polled.status == 200
    assert polled.json()["status"] == "failed"
    assert polled.json()["error"]["code"] == "turn_failed"


def test_if_busy_reject_refuses_a_turn_while_another_runs_and_stores_nothing(serve: Serve) -> None:
    model = GatedChatClient()
    host = serve(lambda: make_agent(model))
    try:
        running = host.request("POST", f"{BASE}/c1/turns", {"message": "first", "wait": False})
        deadline = time.monotonic() + SETTLE_SECONDS
        while not model.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = host.request("POST", f"{BASE}/c1/turns", {"message": "second", "ifBusy": "reject"})
    finally:
        model.gate.set()
    first = settled(host, urlsplit(running.headers["location"]).path)
    messages = host.request("GET", f"{BASE}/c1/messages").json()["messages"]

    assert (refused.status, refused.json()["error"]["code"]) == (409, "conversation_busy")
    assert running.json()["turnId"] in refused.json()["error"]["message"]
    assert first.status == 200 and first.json()["status"] == "completed"
    assert [message["text"] for message in messages if message["role"] == "user"] == ["first"]
