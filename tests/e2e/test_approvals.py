"""Tool approvals over HTTP: requested in one turn, answered in the next, across a host restart."""

from __future__ import annotations

from pathlib import Path

from agent_framework import tool
from apps import build_app, make_agent
from hosting import RunningHost

from agent_host import OfflineChatClient

BASE = "/api/agents/assistant/conversations"
executed: list[str] = []


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    executed.append(order_id)
    return f"Refunded {order_id}."


def app():
    return build_app(make_agent(OfflineChatClient(), tools=[refund]))


def test_an_approved_tool_runs_after_a_restart(tmp_path: Path) -> None:
    executed.clear()
    running = RunningHost(app, tmp_path)
    try:
        asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=A17"})
        running.restart()
        conversation = running.request("GET", f"{BASE}/c1").json()
        request = asked.json()["approvalRequests"][0]
        approved = running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": request["id"], "approved": True}]})
        after = running.request("GET", f"{BASE}/c1").json()
    finally:
        running.stop()

    assert request["toolName"] == "refund" and request["arguments"] == {"order_id": "A17"}
    assert executed == ["A17"]
    assert approved.json()["text"] == "[offline model] The tool returned: Refunded A17."
    assert approved.json()["approvalRequests"] == []
    assert conversation["pendingApprovals"] == [
        {"id": request["id"], "toolName": "refund", "arguments": {"order_id": "A17"}}
    ]
    assert after["pendingApprovals"] == []


def test_a_rejected_tool_does_not_run_and_the_conversation_goes_on(tmp_path: Path) -> None:
    executed.clear()
    running = RunningHost(app, tmp_path)
    try:
        asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=B2"})
        request_id = asked.json()["approvalRequests"][0]["id"]
        rejected = running.request(
            "POST", f"{BASE}/c1/turns", {"approvals": [{"id": request_id, "approved": False}], "message": "never mind"}
        )
        later = running.request("POST", f"{BASE}/c1/turns", {"message": "My name is Ada."})
    finally:
        running.stop()

    assert executed == []
    assert rejected.status == 200 and "Refunded" not in rejected.json()["text"]
    assert later.json()["text"].startswith("[offline model] Noted: your name is Ada.")


def test_answering_an_unknown_approval_is_400_and_nothing_changes(tmp_path: Path) -> None:
    running = RunningHost(app, tmp_path)
    try:
        running.request("POST", f"{BASE}/c1/turns", {"message": "hello"})
        before = running.request("GET", f"{BASE}/c1/messages").json()
        reply = running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": "nope", "approved": True}]})
        after = running.request("GET", f"{BASE}/c1/messages").json()
    finally:
        running.stop()

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "unknown_approval"
    assert after == before


def test_a_keyed_retry_of_an_approval_answer_returns_the_original_turn(tmp_path: Path) -> None:
    # The approval is no longer pending once answered: the idempotency lookup must come before its validation.
    executed.clear()
    running = RunningHost(app, tmp_path)
    try:
        asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=B2"})
        answer = {"approvals": [{"id": asked.json()["approvalRequests"][0]["id"], "approved": True}]}
        key = {"Idempotency-Key": "approve-B2"}
        first = running.request("POST", f"{BASE}/c1/turns", answer, headers=key)
        retry = running.request("POST", f"{BASE}/c1/turns", answer, headers=key)
        other = running.request("POST", f"{BASE}/c1/turns", {"message": "something else"}, headers=key)
        unkeyed = running.request("POST", f"{BASE}/c1/turns", answer)
    finally:
        running.stop()

    assert executed == ["B2"]
    assert first.status == retry.status == 200
    assert retry.json()["turnId"] == first.json()["turnId"]
    assert retry.json()["text"] == first.json()["text"] == "[offline model] The tool returned: Refunded B2."
    assert (other.status, other.json()["error"]["code"]) == (409, "idempotency_key_reused")
    assert (unkeyed.status, unkeyed.json()["error"]["code"]) == (409, "approval_already_answered")


def test_answering_an_approval_again_says_it_was_answered_and_runs_nothing(tmp_path: Path) -> None:
    executed.clear()
    running = RunningHost(app, tmp_path)
    try:
        asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=C3"})
        request_id = asked.json()["approvalRequests"][0]["id"]
        running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": request_id, "approved": False}]})
        before = running.request("GET", f"{BASE}/c1/messages").json()
        again = running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": request_id, "approved": True}]})
        after = running.request("GET", f"{BASE}/c1/messages").json()
    finally:
        running.stop()

    assert executed == []
    assert again.status == 409
    assert again.json()["error"] == {
        "code": "approval_already_answered",
        "message": f"Approval '{request_id}' was already answered (rejected) by an earlier turn; an approval takes "
        "one answer (pending now: none). Nothing was run.",
    }
    assert after == before
