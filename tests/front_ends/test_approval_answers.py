"""Tool approvals over HTTP on the in-memory app (`front_doors`): rejected, answered unknown, answered again, and
retried with a key. Answering one across a host restart is the local host's (tests/e2e/test_approvals.py)."""

from __future__ import annotations

from approval_tools import executed, refund
from apps import make_agent
from front_doors import MemoryFunctionApp, memory_app

from agent_host import OfflineChatClient

BASE = "/api/agents/assistant/conversations"


def app() -> MemoryFunctionApp:
    return memory_app(make_agent(OfflineChatClient(), tools=[refund]))


def test_a_rejected_tool_does_not_run_and_the_conversation_goes_on() -> None:
    executed.clear()
    running = app()
    asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=B2"})
    request_id = asked.json()["approvalRequests"][0]["id"]
    rejected = running.request(
        "POST", f"{BASE}/c1/turns", {"approvals": [{"id": request_id, "approved": False}], "message": "never mind"}
    )
    later = running.request("POST", f"{BASE}/c1/turns", {"message": "My name is Ada."})

    assert executed == []
    assert rejected.status == 200 and "Refunded" not in rejected.json()["text"]
    assert later.json()["text"].startswith("[offline model] Noted: your name is Ada.")


def test_answering_an_unknown_approval_is_400_and_nothing_changes() -> None:
    running = app()
    running.request("POST", f"{BASE}/c1/turns", {"message": "hello"})
    before = running.request("GET", f"{BASE}/c1/messages").json()
    reply = running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": "nope", "approved": True}]})
    after = running.request("GET", f"{BASE}/c1/messages").json()

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "unknown_approval"
    assert after == before


def test_a_keyed_retry_of_an_approval_answer_returns_the_original_turn() -> None:
    # The approval is no longer pending once answered: the idempotency lookup must come before its validation.
    executed.clear()
    running = app()
    asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=B2"})
    answer = {"approvals": [{"id": asked.json()["approvalRequests"][0]["id"], "approved": True}]}
    key = {"Idempotency-Key": "approve-B2"}
    first = running.request("POST", f"{BASE}/c1/turns", answer, headers=key)
    retry = running.request("POST", f"{BASE}/c1/turns", answer, headers=key)
    other = running.request("POST", f"{BASE}/c1/turns", {"message": "something else"}, headers=key)
    unkeyed = running.request("POST", f"{BASE}/c1/turns", answer)

    assert executed == ["B2"]
    assert first.status == retry.status == 200
    assert retry.json()["turnId"] == first.json()["turnId"]
    assert retry.json()["text"] == first.json()["text"] == "[offline model] The tool returned: Refunded B2."
    assert (other.status, other.json()["error"]["code"]) == (409, "idempotency_key_reused")
    assert (unkeyed.status, unkeyed.json()["error"]["code"]) == (409, "approval_already_answered")


def test_answering_an_approval_again_says_it_was_answered_and_runs_nothing() -> None:
    executed.clear()
    running = app()
    asked = running.request("POST", f"{BASE}/c1/turns", {"message": "please refund order_id=C3"})
    request_id = asked.json()["approvalRequests"][0]["id"]
    running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": request_id, "approved": False}]})
    before = running.request("GET", f"{BASE}/c1/messages").json()
    again = running.request("POST", f"{BASE}/c1/turns", {"approvals": [{"id": request_id, "approved": True}]})
    after = running.request("GET", f"{BASE}/c1/messages").json()

    assert executed == []
    assert again.status == 409
    assert again.json()["error"] == {
        "code": "approval_already_answered",
        "message": f"Approval '{request_id}' was already answered (rejected) by an earlier turn; an approval takes "
        "one answer (pending now: none). Nothing was run.",
    }
    assert after == before
