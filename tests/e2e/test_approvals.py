"""Tool approvals over HTTP: requested in one turn, answered in the next, across a host restart. The other ways of
answering one run on the in-memory app (tests/front_ends/test_approval_answers.py)."""

from __future__ import annotations

from pathlib import Path

from approval_tools import executed, refund
from apps import build_app, make_agent
from hosting import RunningHost

from agent_host import OfflineChatClient

BASE = "/api/agents/assistant/conversations"


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
