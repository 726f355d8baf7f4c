"""`GET /api/agents/{agent}/conversations` end to end, on both hosts of the HTTP API: the real durable client's entity
query against the local host, and the standalone worker's entity query of durabletask's in-memory backend."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from apps import make_agent
from chat_clients import ScriptedChatClient
from worker_hosting import HttpHost, Serve


@pytest.fixture
def host(serve: Serve) -> HttpHost:
    return serve(lambda: [make_agent(ScriptedChatClient(), "assistant"), make_agent(ScriptedChatClient(), "billing")])


def start(host: HttpHost, agent: str, *conversations: str) -> None:
    for conversation in conversations:
        reply = host.request("POST", f"/api/agents/{agent}/conversations/{conversation}/turns", {"message": "hi"})
        assert reply.status == 200, reply.body


def test_an_agent_lists_its_own_conversations_only(host: HttpHost) -> None:
    start(host, "assistant", "c2", "c1")
    start(host, "billing", "b1")

    assistant = host.request("GET", "/api/agents/assistant/conversations").json()
    billing = host.request("GET", "/api/agents/billing/conversations").json()

    assert assistant == {
        "agent": "assistant",
        "conversations": [{"conversationId": "c1"}, {"conversationId": "c2"}],
        "continuationToken": None,
    }
    assert billing["conversations"] == [{"conversationId": "b1"}]


def test_pages_follow_the_continuation_token_to_the_end(host: HttpHost) -> None:
    start(host, "assistant", "c1", "c2", "c3", "c4", "c5")

    seen: list[str] = []
    pages = 0
    path = "/api/agents/assistant/conversations?top=2"
    while True:
        body = host.request("GET", path).json()
        pages += 1
        seen += [item["conversationId"] for item in body["conversations"]]
        if body["continuationToken"] is None:
            break
        path = f"/api/agents/assistant/conversations?top=2&continuationToken={quote(body['continuationToken'])}"

    assert seen == ["c1", "c2", "c3", "c4", "c5"]
    assert pages == 3


def test_no_conversation_yet_is_an_empty_list(host: HttpHost) -> None:
    reply = host.request("GET", "/api/agents/billing/conversations")

    assert reply.status == 200
    assert reply.json() == {"agent": "billing", "conversations": [], "continuationToken": None}


def test_a_deleted_conversation_stays_listed_as_its_tombstone_and_reads_as_deleted(host: HttpHost) -> None:
    start(host, "assistant", "gone", "kept")
    assert host.request("DELETE", "/api/agents/assistant/conversations/gone").status == 204

    listed = host.request("GET", "/api/agents/assistant/conversations").json()["conversations"]
    read = host.request("GET", "/api/agents/assistant/conversations/gone")

    assert [item["conversationId"] for item in listed] == ["gone", "kept"]
    assert read.status == 404 and "was deleted" in read.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/agents/nobody/conversations", 404, "agent_not_found"),
        ("/api/agents/assistant/conversations?top=0", 400, "invalid_query"),
        ("/api/agents/assistant/conversations?top=101", 400, "invalid_query"),
        ("/api/agents/assistant/conversations?top=some", 400, "invalid_query"),
        ("/api/agents/assistant/conversations?continuationToken=%E2%82%AC", 400, "invalid_query"),
        ("/api/agents/assistant/conversations?continuationToken=not-a-token-of-this-host", 400, "invalid_query"),
    ],
    ids=["unknown-agent", "top-zero", "top-over-100", "top-not-a-number", "token-not-ascii", "token-not-the-hosts"],
)
def test_a_list_request_it_cannot_answer_says_why(host: HttpHost, path: str, status: int, code: str) -> None:
    reply = host.request("GET", path)

    assert reply.status == status
    assert reply.json()["error"]["code"] == code


def test_the_list_takes_only_get(host: HttpHost) -> None:
    reply = host.request("POST", "/api/agents/assistant/conversations", {"message": "hi"})

    assert reply.status == 405
    assert reply.headers["allow"] == "GET"
    assert reply.json()["error"]["code"] == "method_not_allowed"
