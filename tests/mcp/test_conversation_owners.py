"""Per-user conversations (`conversation_owners`), through the real HTTP triggers and MCP on the local host: another
principal meets exactly the 404 of a conversation that does not exist on every route and changes nothing, the owner
reaches it on every route, listing shows the caller's own, and a conversation stored before owners were on is the
admin key's. The single-route checks run on the in-memory app (tests/front_ends/test_owner_checks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apps import build_app, make_agent
from hosting import RunningHost
from mcp_harness import call_tool
from principals import ADMIN, ADMIN_KEY, ALICE, BOB, C1, CONVERSATIONS, snapshot, started
from tool_results import texts

from agent_host import ConversationNotFoundError, OfflineChatClient


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningHost]:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)

    def app() -> Any:
        agent = make_agent(OfflineChatClient())
        return build_app(agent, conversation_owners=True, enable_mcp_tool_trigger=True, inspector=True)

    running = RunningHost(app, tmp_path)
    yield running
    running.stop()


def conversation_routes(turn_id: str) -> list[tuple[str, str, Any, dict[str, str]]]:
    """Every HTTP route that reaches conversation c1: method, path, body, extra headers."""
    agui = {"threadId": "c1", "runId": "r-other", "messages": [{"id": "x1", "role": "user", "content": "Hi"}]}
    return [
        ("POST", f"{C1}/turns", {"message": "What is my name?"}, {}),
        ("POST", f"{C1}/turns", {"message": "What is my name?"}, {"Accept": "text/event-stream"}),
        ("POST", f"{C1}/turns", {"message": "Keyed?"}, {"Idempotency-Key": "k-1"}),
        ("GET", f"{C1}/turns/{turn_id}", None, {}),
        ("GET", f"{C1}/turns/{turn_id}/stream", None, {}),
        ("GET", C1, None, {}),
        ("GET", f"{C1}/messages", None, {}),
        ("PUT", f"{C1}/retention", {"mode": "auto", "maxStateBytes": 300000}, {}),
        ("DELETE", C1, None, {}),
        ("POST", "/api/agents/assistant/run", {"message": "What is my name?", "session_id": "c1"}, {}),
        ("POST", "/api/agents/assistant/agui", agui, {}),
        ("GET", "/api/inspector/agents/assistant/conversations/c1", None, {}),
    ]


def test_another_principal_meets_the_404_of_a_missing_conversation_everywhere_and_changes_nothing(
    host: RunningHost,
) -> None:
    turn_id = started(host)
    before = snapshot(host)
    missing = host.request("GET", f"{CONVERSATIONS}/never-started", headers=BOB)

    replies = [
        (method, path, host.request(method, path, body, headers={**BOB, **extra}))
        for method, path, body, extra in conversation_routes(turn_id)
    ]
    tool = call_tool(host, "assistant", {"query": "What is my name?", "sessionId": "c1"}, headers=BOB)
    host.wait_idle()

    assert missing.status == 404
    assert missing.json() == ConversationNotFoundError("assistant", "never-started").body()
    for method, path, reply in replies:
        assert (method, path, reply.status) == (method, path, 404), reply.body
        assert reply.json() == ConversationNotFoundError("assistant", "c1").body(), (method, path)
    assert tool.is_error
    assert tool.structured_content["error"]["code"] == "conversation_not_found"
    assert snapshot(host) == before
    listed = host.request("GET", CONVERSATIONS, headers=BOB).json()["conversations"]
    assert listed == []


def test_the_owner_reaches_its_conversation_on_every_route(host: RunningHost) -> None:
    turn_id = started(host)

    replies = [
        (method, path, host.request(method, path, body, headers={**ALICE, **extra}))
        for method, path, body, extra in conversation_routes(turn_id)
        if method != "DELETE"
    ]
    tool = call_tool(host, "assistant", {"query": "What is my name?", "sessionId": "c1"}, headers=ALICE)
    listed = host.request("GET", CONVERSATIONS, headers=ALICE).json()["conversations"]
    deleted = host.request("DELETE", C1, headers=ALICE)

    for method, path, reply in replies:
        assert reply.status in (200, 202), (method, path, reply.status, reply.body)
    assert not tool.is_error and "Ada" in texts(tool)[0]
    assert [item["conversationId"] for item in listed] == ["c1"]
    assert deleted.status == 204


def test_listing_shows_each_principal_its_own_and_the_admin_key_every_one(host: RunningHost) -> None:
    started(host)
    assert host.request("POST", f"{CONVERSATIONS}/b1/turns", {"message": "Hi"}, headers=BOB).status == 200

    def listed(headers: dict[str, str]) -> list[str]:
        reply = host.request("GET", CONVERSATIONS, headers=headers)
        assert reply.status == 200, reply.body
        return sorted(item["conversationId"] for item in reply.json()["conversations"])

    assert listed(ALICE) == ["c1"]
    assert listed(BOB) == ["b1"]
    assert listed(ADMIN) == ["b1", "c1"]


def test_a_conversation_stored_before_owners_were_on_is_reached_only_with_the_admin_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)
    open_host = RunningHost(lambda: build_app(make_agent(OfflineChatClient())), tmp_path)
    try:
        assert open_host.request("POST", f"{C1}/turns", {"message": "Hi"}).status == 200
    finally:
        open_host.stop()
    owned_host = RunningHost(
        lambda: build_app(make_agent(OfflineChatClient()), conversation_owners=lambda headers: headers.get("x-user")),
        tmp_path,
    )
    try:
        hooked = owned_host.request("GET", C1, headers={"x-user": "carol"})
        admin = owned_host.request("GET", C1, headers=ADMIN)
    finally:
        owned_host.stop()

    assert hooked.status == 404 and hooked.json() == ConversationNotFoundError("assistant", "c1").body()
    assert admin.status == 200 and admin.json()["turnCount"] == 1
