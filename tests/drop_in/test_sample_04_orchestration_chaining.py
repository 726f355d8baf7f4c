"""Sample 04 (single-agent orchestration chaining) of agent-framework-azurefunctions, as our own app
(`drop_in_orchestrations.chaining_app`): two turns of one agent in one conversation, started and read over the
sample's own routes."""

from __future__ import annotations

from drop_in_hosts import module_host, path_of, poll
from drop_in_orchestrations import chaining_app
from hosting import RunningHost

OFFLINE = "[offline model]"


host = module_host(chaining_app)


def test_04_the_second_turn_refines_the_first_in_the_same_conversation(host: RunningHost) -> None:
    started = host.request("POST", "/api/singleagent/run")
    status = poll(
        host, path_of(started.json()["statusQueryGetUri"]), lambda r: r.json()["runtimeStatus"] == "Completed"
    )
    conversations = host.request("GET", "/api/agents/WriterAgent/conversations").json()["conversations"]
    (conversation,) = conversations
    summary = host.request("GET", f"/api/agents/WriterAgent/conversations/{conversation['conversationId']}").json()

    initial = (
        f'{OFFLINE} You said: "Write a concise inspirational sentence about learning.". '
        "(0 earlier messages in this conversation.)"
    )
    assert started.status == 202 and started.json()["message"] == "Single-agent orchestration started."
    assert started.json()["statusQueryGetUri"].endswith(f"/api/singleagent/status/{started.json()['instanceId']}")
    assert status.json()["output"] == (
        f'{OFFLINE} You said: "Improve this further while keeping it under 25 words: {initial}". '
        "(2 earlier messages in this conversation.)"
    )
    assert summary["messageCount"] == 4 and summary["turnCount"] == 2


def test_04_an_unknown_instance_is_404(host: RunningHost) -> None:
    reply = host.request("GET", "/api/singleagent/status/no-such-instance")

    assert (reply.status, reply.json()) == (404, {"error": "Instance not found."})
