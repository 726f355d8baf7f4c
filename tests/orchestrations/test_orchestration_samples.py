"""Every orchestration of the sample, over HTTP on the local host with the offline model, content asserted.

The offline model repeats what it was asked and counts the earlier messages of its conversation, so an answer
shows which turns shared a conversation. Conversations are read back from the host's store and its HTTP API.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hosting import Reply, RunningHost
from sample_host import FUNCTION_KEY, sample_host

__all__ = ["sample_host"]

KEY = {"x-functions-key": FUNCTION_KEY}
ORCHESTRATION_TURN_ID = re.compile(r"[0-9a-f]{11}o[0-9a-f]{20}")


def offline(said: str, earlier: int) -> str:
    return f'[offline model] You said: "{said}". ({earlier} earlier messages in this conversation.)'


def post(running: RunningHost, path: str, body: Any) -> Reply:
    return running.request("POST", path, body, headers=KEY)


def stored(running: RunningHost, agent: str, conversation_id: str) -> dict[str, Any]:
    assert running.host is not None
    text = running.host.store.read_state(f"conversation_{agent}", conversation_id)
    assert text is not None, (agent, conversation_id)
    return json.loads(text)


def test_chain_revises_in_the_writers_conversation_and_polishes_in_the_editors(sample_host: RunningHost) -> None:
    reply = post(sample_host, "/api/orchestrations/chain", {"topic": "rain"})

    body = reply.json()
    output = body["output"]
    state = stored(sample_host, "writer", output["conversationId"])
    assert (reply.status, body["status"], body["name"]) == (200, "Completed", "chain")
    assert output["draft"] == offline("Write a haiku about rain.", 0)
    assert output["sadder"] == offline("Make it sadder.", 2)
    assert output["final"] == offline(f"Polish this haiku: {output['sadder']}", 0)
    assert [message["text"] for message in state["messages"]] == [
        "Write a haiku about rain.",
        output["draft"],
        "Make it sadder.",
        output["sadder"],
    ]
    assert len(state["turns"]) == 2
    assert all(ORCHESTRATION_TURN_ID.fullmatch(turn_id) for turn_id in state["turns"])


def test_fan_out_asks_three_agents_in_their_own_conversations_and_combines_their_answers(
    sample_host: RunningHost,
) -> None:
    reply = post(sample_host, "/api/orchestrations/fan_out", {"question": "Why rain?"})

    output = reply.json()["output"]
    combined = "\n".join(f"{name}: {offline('Why rain?', 0)}" for name in ("writer", "editor", "critic"))
    assert reply.status == 200
    assert output["answers"] == {name: offline("Why rain?", 0) for name in ("writer", "editor", "critic")}
    assert output["summary"] == offline(f"Combine these answers into one: {combined}", 0)


def test_triage_branches_on_the_structured_answer(sample_host: RunningHost) -> None:
    urgent = post(sample_host, "/api/orchestrations/triage", {"ticket": "URGENT: login is broken, technical"}).json()
    calm = post(sample_host, "/api/orchestrations/triage", {"ticket": "A billing question about my invoice"}).json()

    assert {key: urgent["output"][key] for key in ("category", "urgent", "route")} == {
        "category": "technical",
        "urgent": True,
        "route": "escalation",
    }
    assert urgent["output"]["text"] == offline(
        "Write an escalation note for the on-call technical engineer: URGENT: login is broken, technical", 0
    )
    assert {key: calm["output"][key] for key in ("category", "urgent", "route")} == {
        "category": "billing",
        "urgent": False,
        "route": "reply",
    }


def test_an_approval_survives_a_host_restart_and_sees_the_persons_turn_in_its_conversation(
    sample_host: RunningHost,
) -> None:
    started = post(sample_host, "/api/orchestrations/approval", {"topic": "the cafe"}).json()
    conversation = started["customStatus"]["conversationId"]

    sample_host.restart()
    person = post(sample_host, f"/api/agents/writer/conversations/{conversation}/turns", {"message": "Add umbrellas."})
    waiting = sample_host.request("GET", f"/api/orchestrations/instances/{started['id']}", headers=KEY).json()
    approved = post(sample_host, f"/api/orchestrations/instances/{started['id']}/approval", {"approved": True})

    state = stored(sample_host, "writer", conversation)
    assert (started["status"], started["customStatus"]["stage"]) == ("Running", "awaiting approval")
    assert started["customStatus"]["draft"] == offline("Write a short announcement about the cafe.", 0)
    assert person.json()["text"] == offline("Add umbrellas.", 2)
    assert (waiting["status"], waiting["customStatus"]["stage"]) == ("Running", "awaiting approval")
    assert approved.status == 200
    assert approved.json()["output"] == {
        "outcome": "published",
        "conversationId": conversation,
        "text": offline("Approved. Write the final version.", 4),
    }
    assert len(state["messages"]) == 6
    assert [bool(ORCHESTRATION_TURN_ID.fullmatch(turn_id)) for turn_id in state["turns"]] == [True, False, True]


def test_a_rejection_revises_the_draft_in_the_same_conversation(sample_host: RunningHost) -> None:
    started = post(sample_host, "/api/orchestrations/approval", {"topic": "the menu"}).json()

    rejected = post(
        sample_host,
        f"/api/orchestrations/instances/{started['id']}/approval",
        {"approved": False, "feedback": "Shorter"},
    ).json()

    assert rejected["output"]["outcome"] == "revised"
    assert rejected["output"]["text"] == offline("Rejected: Shorter. Revise it.", 2)


def test_an_unanswered_approval_times_out_when_its_timer_fires(sample_host: RunningHost) -> None:
    started = post(sample_host, "/api/orchestrations/approval", {"topic": "hours", "timeoutSeconds": 1}).json()

    finished = sample_host.request("GET", f"/api/orchestrations/instances/{started['id']}?waitSeconds=20", headers=KEY)

    assert finished.status == 200
    assert finished.json()["output"] == {
        "outcome": "timed out",
        "conversationId": started["customStatus"]["conversationId"],
        "draft": offline("Write a short announcement about hours.", 0),
    }


def test_the_sample_routes_refuse_bad_input_with_a_json_error(sample_host: RunningHost) -> None:
    started = post(sample_host, "/api/orchestrations/approval", {"topic": "x"}).json()
    cases = [
        (post(sample_host, "/api/orchestrations/nope", {}), 404, "orchestration_not_found"),
        (
            sample_host.request("POST", "/api/orchestrations/chain", raw=b"{", headers=KEY),
            400,
            "invalid_json",
        ),
        (
            post(sample_host, f"/api/orchestrations/instances/{started['id']}/approval", {"ok": 1}),
            400,
            "invalid_approval",
        ),
        (
            post(sample_host, "/api/orchestrations/instances/missing/approval", {"approved": True}),
            404,
            "instance_not_found",
        ),
        (
            sample_host.request("GET", f"/api/orchestrations/instances/{started['id']}?waitSeconds=nan", headers=KEY),
            400,
            "invalid_wait",
        ),
    ]

    assert [(reply.status, reply.json()["error"]["code"]) for reply, _, _ in cases] == [
        (status, code) for _, status, code in cases
    ]
