"""Keeping the conversations of a deployed agent-framework-azurefunctions app: `import_published=True`.

The published host's `dafx-joker` entity state (as that package writes it) is put in the local host's store, as it
stays in the task hub when an app switches. The first turn of that conversation here starts from its history and
recalls its facts; later turns do not import again; the published entity is never changed; a deleted conversation
is not brought back; state that cannot be imported is a 422 that changes nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent
from drop_in_hosts import serving
from hosting import RunningHost
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from agent_host import AgentFunctionApp, OfflineChatClient

PUBLISHED_ENTITY = "dafx-joker"


def published_state(*exchanges: tuple[str, str]) -> str:
    """A `dafx-joker` state of these (user, assistant) exchanges, shaped as agent-framework-durabletask writes it."""
    history: list[dict[str, Any]] = []
    for number, (asked, answered) in enumerate(exchanges):
        at = f"2026-01-01T00:0{number}:00+00:00"
        history.append(
            {
                "$type": "request",
                "correlationId": f"corr-{number}",
                "createdAt": at,
                "messages": [{"role": "user", "contents": [{"$type": "text", "text": asked}], "createdAt": at}],
                "responseType": "json",
            }
        )
        reply = {"role": "assistant", "contents": [{"$type": "text", "text": answered}], "authorName": "Joker"}
        history.append({"$type": "response", "correlationId": f"corr-{number}", "createdAt": at, "messages": [reply]})
    return json.dumps({"schemaVersion": "1.1.0", "data": {"conversationHistory": history}})


SAVED = published_state(("My codename is BLUEHERON.", "Noted."), ("Tell me a joke.", "Why did the duck cross?"))


def app(import_published: bool = True) -> AgentFunctionApp:
    joker = Agent(OfflineChatClient(), "You are good at telling jokes.", name="Joker")
    return AgentFunctionApp(agents=[joker], enable_mcp_tool_trigger=True, import_published=import_published)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[RunningHost]:
    with serving(app, tmp_path) as running:
        yield running


def saved(host: RunningHost, key: str, state: str = SAVED) -> None:
    assert host.host is not None
    host.host.store.write_state(PUBLISHED_ENTITY, key, state)


def messages(host: RunningHost, key: str) -> list[tuple[str, str, str]]:
    reply = host.request("GET", f"/api/agents/Joker/conversations/{key}/messages")
    return [(m["messageId"], m["role"], m["text"]) for m in reply.json()["messages"]]


def test_the_first_turn_recalls_what_the_published_host_kept(host: RunningHost) -> None:
    saved(host, "session-001")

    answer = host.request(
        "POST", "/api/agents/Joker/run", {"message": "What is my codename?", "session_id": "session-001"}
    )
    conversation = host.request("GET", "/api/agents/Joker/conversations/session-001").json()

    assert answer.json()["response"] == "[offline model] Your codename is BLUEHERON."
    assert messages(host, "session-001")[:4] == [
        ("corr-0.q0", "user", "My codename is BLUEHERON."),
        ("corr-0.a0", "assistant", "Noted."),
        ("corr-1.q0", "user", "Tell me a joke."),
        ("corr-1.a0", "assistant", "Why did the duck cross?"),
    ]
    assert conversation["importedFrom"]["entity"] == PUBLISHED_ENTITY
    assert (conversation["importedFrom"]["messages"], conversation["messageCount"]) == (4, 6)


def test_later_turns_do_not_import_again_and_the_published_entity_is_unchanged(host: RunningHost) -> None:
    assert host.host is not None
    saved(host, "session-002")
    host.request("POST", "/api/agents/Joker/run", {"message": "Hello.", "session_id": "session-002"})
    # The published app wrote on afterwards (it would not, once switched): nothing of it arrives here now.
    saved(host, "session-002", published_state(("My codename is RAVEN.", "Noted.")))

    host.request("POST", "/api/agents/Joker/run", {"message": "What is my codename?", "session_id": "session-002"})

    assert [text for _, _, text in messages(host, "session-002")][-1] == "[offline model] Your codename is BLUEHERON."
    assert len(messages(host, "session-002")) == 8
    assert host.host.store.read_state(PUBLISHED_ENTITY, "session-002") == published_state(
        ("My codename is RAVEN.", "Noted.")
    )


def test_the_turns_route_and_an_mcp_call_import_too(host: RunningHost) -> None:
    assert host.host is not None
    saved(host, "over-turns")
    saved(host, "over-mcp")
    endpoint = f"{host.host.base_url}/runtime/webhooks/mcp"

    turn = host.request("POST", "/api/agents/Joker/conversations/over-turns/turns", {"message": "What is my codename?"})

    async def call() -> Any:
        async with streamable_http_client(endpoint) as (read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("Joker", {"query": "What is my codename?", "sessionId": "over-mcp"})

    result = asyncio.run(call())
    assert turn.json()["text"] == "[offline model] Your codename is BLUEHERON."
    assert result.content[0].text == "[offline model] Your codename is BLUEHERON."


def test_a_conversation_deleted_here_is_not_imported_again(host: RunningHost) -> None:
    saved(host, "session-003")
    host.request("POST", "/api/agents/Joker/run", {"message": "Hi.", "session_id": "session-003"})
    assert host.request("DELETE", "/api/agents/Joker/conversations/session-003").status == 204

    again = host.request(
        "POST", "/api/agents/Joker/run", {"message": "What is my codename?", "session_id": "session-003"}
    )

    assert (
        again.json()["response"]
        == "[offline model] I don't know your codename yet; nobody told me in this conversation."
    )


def test_published_state_that_cannot_be_imported_is_422_and_nothing_runs(host: RunningHost) -> None:
    saved(host, "session-004", json.dumps({"data": {"conversationHistory": []}}))

    answer = host.request("POST", "/api/agents/Joker/run", {"message": "Hello.", "session_id": "session-004"})

    assert answer.status == 422 and answer.json()["error"]["code"] == "state_corrupt"
    assert "has schemaVersion None" in answer.json()["error"]["message"]
    assert host.request("GET", "/api/agents/Joker/conversations/session-004").status == 404


def test_without_import_published_a_published_conversation_starts_empty_here(tmp_path: Path) -> None:
    with serving(lambda: app(import_published=False), tmp_path / "off") as running:
        saved(running, "session-005")

        answer = running.request(
            "POST", "/api/agents/Joker/run", {"message": "What is my codename?", "session_id": "session-005"}
        )

    assert answer.json()["response"].startswith("[offline model] I don't know your codename yet")
