"""Sample 01 (single agent) of agent-framework-azurefunctions, as our own app on the local host.

The app is written against the published API with only its import changed (`drop_in_agents.single_agent_app`); the
requests are those of the sample's README, `demo.http` and integration test, asserted on content: health, a session
that recalls a fact, plain-text requests, the session in the query, and requests not waited for.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from drop_in_agents import single_agent_app
from drop_in_hosts import module_host, path_of, poll, run_agent
from hosting import RunningHost

joker = module_host(single_agent_app)


def test_01_health_is_healthy_and_lists_the_agent(joker: RunningHost) -> None:
    reply = joker.request("GET", "/api/health")

    assert reply.status == 200
    assert reply.json()["status"] == "healthy"
    assert reply.json()["agents"] == [
        {"name": "Joker", "type": "Agent", "http_endpoint_enabled": True, "mcp_tool_enabled": False}
    ]
    assert reply.json()["agent_count"] == 1


def test_01_a_session_recalls_the_codename_across_turns(joker: RunningHost) -> None:
    first = run_agent(joker, "Joker", {"message": "My project codename is BLUEHERON.", "session_id": "codename-1"})
    second = run_agent(joker, "Joker", {"message": "What is my project codename?", "session_id": "codename-1"})

    assert (first.status, second.status) == (200, 200)
    assert second.json()["status"] == "success"
    assert "blueheron" in second.json()["response"].lower()
    assert first.json()["session_id"] == second.json()["session_id"] == "codename-1"
    assert first.json()["correlation_id"] != second.json()["correlation_id"]
    assert second.json()["message_count"] == 4
    assert second.json()["agent_response"]["messages"][0]["contents"][0]["text"] == second.json()["response"]


def test_01_the_camel_case_session_id_of_the_demo_http_continues_the_conversation(joker: RunningHost) -> None:
    # The sample's demo.http sends sessionId; that host's 1.0.0b260922 ignores it and starts a new conversation.
    run_agent(joker, "Joker", {"message": "My favourite joke is the one about the duck.", "sessionId": "session-001"})
    second = run_agent(joker, "Joker", {"message": "What is my favourite joke?", "sessionId": "session-001"})

    assert second.json()["session_id"] == "session-001"
    assert second.json()["response"] == "[offline model] Your favourite joke is the one about the duck."


def test_01_a_plain_text_request_gets_a_plain_text_answer_with_the_session_header(joker: RunningHost) -> None:
    reply = run_agent(joker, "Joker", None, headers={"Content-Type": "text/plain"}, raw=b"Tell me a joke.")

    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain")
    assert (
        reply.body.decode() == '[offline model] You said: "Tell me a joke.". (0 earlier messages in this conversation.)'
    )
    assert re.fullmatch(r"[0-9a-f]{32}", reply.headers["x-ms-session-id"])


@pytest.mark.parametrize("name", ["session_id", "thread_id"])
def test_01_the_session_in_the_query_is_the_answers_session_header(joker: RunningHost, name: str) -> None:
    reply = joker.request(
        "POST", f"/api/agents/Joker/run?{name}=query-{name}", headers={"Content-Type": "text/plain"}, raw=b"Hi."
    )

    assert reply.headers["x-ms-session-id"] == f"query-{name}"
    assert "x-ms-thread-id" not in reply.headers


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"message": "Later, please.", "wait_for_response": False}, {}),
        ({"message": "Later, please."}, {"x-ms-wait-for-response": "false"}),
    ],
)
def test_01_not_waiting_answers_202_accepted(joker: RunningHost, body: dict[str, Any], headers: dict[str, str]) -> None:
    reply = run_agent(joker, "Joker", {**body, "session_id": "later-1"}, headers=headers)

    assert reply.status == 202
    assert {key: reply.json()[key] for key in ("response", "message", "session_id", "status")} == {
        "response": "Agent request accepted",
        "message": "Later, please.",
        "session_id": "later-1",
        "status": "accepted",
    }
    turn = poll(joker, path_of(reply.headers["location"]), lambda r: r.status == 200)
    assert turn.json()["turnId"] == reply.json()["correlation_id"]
