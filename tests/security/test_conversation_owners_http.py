"""Per-user conversations (`conversation_owners`) over HTTP, on both hosts of the HTTP API (the function app on the
local host and the standalone worker's ASGI app, the `serve` fixture): another principal meets exactly the 404 of a
conversation that does not exist on every route and changes nothing, a request naming nobody is 401, listing shows
the caller's own, and the admin key reaches every conversation. The inspector and MCP, served by the function app
only, are in tests/mcp/test_conversation_owners.py."""

from __future__ import annotations

from typing import Any

import pytest
from apps import make_agent
from principals import ADMIN_KEY, ALICE, BOB, C1, CONVERSATIONS, admin, snapshot, started
from worker_hosting import HttpHost, Serve

from agent_host import ConversationNotFoundError, OfflineChatClient, TurnFinishedError
from agent_host._http.openai_responses import ResponseRef


def offline_agent() -> Any:
    return make_agent(OfflineChatClient())


@pytest.fixture
def host(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> HttpHost:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)
    return serve(offline_agent, conversation_owners=True)


def conversation_routes(turn_id: str) -> list[tuple[str, str, Any, dict[str, str]]]:
    """Every HTTP route both hosts serve that reaches conversation c1: method, path, body, extra headers."""
    agui = {"threadId": "c1", "runId": "r-other", "messages": [{"id": "x1", "role": "user", "content": "Hi"}]}
    return [
        ("POST", f"{C1}/turns", {"message": "What is my name?"}, {}),
        ("POST", f"{C1}/turns", {"message": "What is my name?"}, {"Accept": "text/event-stream"}),
        ("POST", f"{C1}/turns", {"message": "Keyed?"}, {"Idempotency-Key": "k-1"}),
        ("GET", f"{C1}/turns/{turn_id}", None, {}),
        ("GET", f"{C1}/turns/{turn_id}/stream", None, {}),
        ("POST", f"{C1}/turns/{turn_id}/cancel", None, {}),
        ("GET", C1, None, {}),
        ("GET", f"{C1}/messages", None, {}),
        ("PUT", f"{C1}/retention", {"mode": "auto", "maxStateBytes": 300000}, {}),
        ("DELETE", C1, None, {}),
        ("POST", "/api/agents/assistant/run", {"message": "What is my name?", "session_id": "c1"}, {}),
        ("POST", "/api/agents/assistant/agui", agui, {}),
    ]


def test_another_principal_meets_the_404_of_a_missing_conversation_everywhere_and_changes_nothing(
    host: HttpHost,
) -> None:
    turn_id = started(host)
    before = snapshot(host)
    missing = host.request("GET", f"{CONVERSATIONS}/never-started", headers=BOB)

    replies = [
        (method, path, host.request(method, path, body, headers={**BOB, **extra}))
        for method, path, body, extra in conversation_routes(turn_id)
    ]
    host.wait_idle()

    assert missing.status == 404
    assert missing.json() == ConversationNotFoundError("assistant", "never-started").body()
    for method, path, reply in replies:
        assert (method, path, reply.status) == (method, path, 404), reply.body
        assert reply.json() == ConversationNotFoundError("assistant", "c1").body(), (method, path)
    assert snapshot(host) == before
    listed = host.request("GET", CONVERSATIONS, headers=BOB).json()["conversations"]
    assert listed == []


def test_the_owner_reaches_its_conversation_on_every_route(host: HttpHost) -> None:
    turn_id = started(host)
    cancel = f"{C1}/turns/{turn_id}/cancel"

    replies = [
        (method, path, host.request(method, path, body, headers={**ALICE, **extra}))
        for method, path, body, extra in conversation_routes(turn_id)
        if method != "DELETE"
    ]
    listed = host.request("GET", CONVERSATIONS, headers=ALICE).json()["conversations"]
    deleted = host.request("DELETE", C1, headers=ALICE)

    for method, path, reply in replies:
        if path == cancel:  # the owner is told its turn already finished, as a cancel of a finished turn is
            assert reply.status == 409
            assert reply.json() == TurnFinishedError("c1", turn_id, "completed").body()
        else:
            assert reply.status in (200, 202), (method, path, reply.status, reply.body)
    assert [item["conversationId"] for item in listed] == ["c1"]
    assert deleted.status == 204


def test_listing_shows_each_principal_its_own_and_the_admin_key_every_one(host: HttpHost) -> None:
    started(host)
    assert host.request("POST", f"{CONVERSATIONS}/b1/turns", {"message": "Hi"}, headers=BOB).status == 200

    def listed(headers: dict[str, str]) -> list[str]:
        reply = host.request("GET", CONVERSATIONS, headers=headers)
        assert reply.status == 200, reply.body
        return sorted(item["conversationId"] for item in reply.json()["conversations"])

    assert listed(ALICE) == ["c1"]
    assert listed(BOB) == ["b1"]
    assert listed(admin(host)) == ["b1", "c1"]


def test_the_admin_key_reads_and_changes_any_conversation(host: HttpHost) -> None:
    started(host)

    read = host.request("GET", f"{C1}/messages", headers=admin(host))
    turn = host.request("POST", f"{C1}/turns", {"message": "What is my name?"}, headers=admin(host))
    owner_after = host.request("GET", C1, headers=ALICE)

    assert read.status == 200 and read.json()["messages"][0]["text"] == "My name is Ada."
    assert turn.status == 200 and turn.json()["text"] == "[offline model] Your name is Ada."
    assert owner_after.status == 200 and owner_after.json()["turnCount"] == 2  # still Alice's


@pytest.mark.parametrize("wrong_key", [None, "not-the-admin-key"], ids=["nothing", "another-key"])
def test_a_request_naming_no_principal_is_401(host: HttpHost, wrong_key: str | None) -> None:
    headers = {} if wrong_key is None else admin(host, wrong_key)

    turn = host.request("POST", f"{C1}/turns", {"message": "Hi"}, headers=headers)
    listing = host.request("GET", CONVERSATIONS, headers=headers)

    for reply in (turn, listing):
        assert reply.status == 401
        assert reply.json()["error"]["code"] == "unauthenticated"
    assert host.request("GET", C1, headers=admin(host)).status == 404  # nothing was created


def test_a_conversation_stored_before_owners_were_on_is_reached_only_with_the_admin_key(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_HOST_ADMIN_KEY", ADMIN_KEY)
    open_host = serve(offline_agent)
    assert open_host.request("POST", f"{C1}/turns", {"message": "Hi"}).status == 200
    open_host.stop()
    owned_host = serve(offline_agent, conversation_owners=lambda headers: headers.get("x-user"))

    hooked = owned_host.request("GET", C1, headers={"x-user": "carol"})
    admin_read = owned_host.request("GET", C1, headers=admin(owned_host))

    assert hooked.status == 404 and hooked.json() == ConversationNotFoundError("assistant", "c1").body()
    assert admin_read.status == 200 and admin_read.json()["turnCount"] == 1


def test_a_retention_change_creates_a_conversation_its_principal_owns(host: HttpHost) -> None:
    retention = {"mode": "auto", "maxStateBytes": 300000}
    created = host.request("PUT", f"{CONVERSATIONS}/r1/retention", retention, headers=BOB)

    assert created.status == 200, created.body
    assert host.request("GET", f"{CONVERSATIONS}/r1", headers=BOB).status == 200
    other = host.request("GET", f"{CONVERSATIONS}/r1", headers=ALICE)
    assert other.status == 404 and other.json() == ConversationNotFoundError("assistant", "r1").body()


def test_a_deleted_conversation_reads_as_never_existing_to_another_principal(host: HttpHost) -> None:
    started(host)
    assert host.request("DELETE", C1, headers=ALICE).status == 204

    owner = host.request("GET", C1, headers=ALICE)
    other = host.request("GET", C1, headers=BOB)
    taken = host.request("POST", f"{C1}/turns", {"message": "Mine now?"}, headers=BOB)

    assert owner.json() == ConversationNotFoundError("assistant", "c1", deleted=True).body()
    assert other.json() == ConversationNotFoundError("assistant", "c1").body()
    assert taken.status == 404  # the id stays its owner's


def test_another_principal_cannot_reach_a_conversation_through_the_openai_responses_api(host: HttpHost) -> None:
    turn_id = started(host)
    before = snapshot(host)
    alices = ResponseRef("assistant", "c1", turn_id).response_id
    responses = "/api/openai/v1/responses"

    continued = host.request(
        "POST", responses, {"model": "assistant", "input": "Name?", "conversation": "c1"}, headers=BOB
    )
    chained = host.request(
        "POST", responses, {"model": "assistant", "input": "Name?", "previous_response_id": alices}, headers=BOB
    )
    streamed = host.request(
        "POST", responses, {"model": "assistant", "input": "Name?", "conversation": "c1", "stream": True}, headers=BOB
    )
    retrieved = host.request("GET", f"{responses}/{alices}", headers=BOB)
    own = host.request("GET", f"{responses}/{alices}", headers=ALICE)
    host.wait_idle()

    assert [reply.status for reply in (continued, chained, streamed, retrieved)] == [404, 404, 404, 404]
    assert continued.json()["error"]["code"] == "conversation_not_found"
    assert streamed.json() == continued.json()  # refused before any event is sent
    assert retrieved.json()["error"]["code"] == "conversation_not_found"
    assert own.status == 200 and own.json()["status"] == "completed"
    assert snapshot(host) == before
