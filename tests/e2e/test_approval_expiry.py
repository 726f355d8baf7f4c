"""Tool approvals that expire, over HTTP on the local host with a test clock: a request left unanswered past its
lifetime is declined by the next turn (the tool never runs, the model is told it was declined, the conversation says
why), a late answer is refused, and a turn's lifetime overrides the agent's."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message, tool
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from clocks import EPOCH_MS, ManualClock
from hosting import RunningHost

from agent_host import AgentFunctionApp

BASE = "/api/agents/assistant/conversations"
AGENT_TTL = datetime.timedelta(minutes=10)
ASK = {"message": 'call refund {"order_id": "A17"}'}
refunds: list[str] = []


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    refunds.append(order_id)
    return f"Refunded {order_id}."


class ExpiryHost(RunningHost):
    """The local host running an agent whose approvals live ten minutes, on a clock the test moves."""

    def __init__(self, state_dir: Path) -> None:
        self.clock = ManualClock()
        self.model = ScriptedChatClient()
        super().__init__(self.build, state_dir)

    def build(self) -> AgentFunctionApp:
        return app_with_approval_ttl(self.model, self.clock, AGENT_TTL)

    def post(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        reply = self.request("POST", f"{BASE}/c1/turns", body)
        return reply.status, reply.json()

    def get(self, path: str = "") -> dict[str, Any]:
        return self.request("GET", f"{BASE}/c1{path}").json()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[ExpiryHost]:
    refunds.clear()
    running = ExpiryHost(tmp_path)
    yield running
    running.stop()


def app_with_approval_ttl(model: ScriptedChatClient, clock: ManualClock, approval_ttl: Any) -> AgentFunctionApp:
    app = build_app(clock=clock)
    app.add_agent(make_agent(model, tools=[refund]), approval_ttl=approval_ttl)
    return app


def iso(epoch_ms: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def declined_results(messages: list[Message]) -> list[Any]:
    """The function results of declined tool calls among the messages a model call was sent."""
    return [
        content.result
        for message in messages
        for content in message.contents
        if content.type == "function_result" and "rejected" in str(content.result)
    ]


def test_an_expired_approval_is_declined_by_the_next_turn_and_its_tool_never_runs(host: ExpiryHost) -> None:
    _, asked = host.post(ASK)
    request = asked["approvalRequests"][0]
    fresh = host.get()
    host.clock.advance(AGENT_TTL.total_seconds())
    lapsed = host.get()
    host.restart()  # the lifetime is stored with the request: a cold start keeps it
    calls_before = len(host.model.calls)
    status, turn = host.post({"message": "Any news?"})
    receipt = host.get(f"/turns/{turn['turnId']}")
    messages = host.get("/messages")["messages"]
    after = host.get()

    expires_at = iso(EPOCH_MS + int(AGENT_TTL.total_seconds() * 1000))
    assert request["toolName"] == "refund" and request["expiresAt"] == expires_at
    assert fresh["pendingApprovals"] == [{**request, "expired": False}]
    # Reading shows it expired without writing anything: the next turn declines it.
    assert lapsed["pendingApprovals"] == [{**request, "expired": True}]
    assert lapsed["updatedAt"] == fresh["updatedAt"] and lapsed["stateBytes"] == fresh["stateBytes"]
    assert status == 200 and refunds == []
    assert declined_results(host.model.calls[calls_before]) == ["Error: Tool call invocation was rejected by user."]
    expired = [{**request, "declinedBecause": "expired"}]
    assert turn["expiredApprovals"] == receipt["expiredApprovals"] == expired
    declines = [
        content
        for message in messages
        for content in message["contents"]
        if content["type"] == "function_approval_response"
    ]
    assert [(d["id"], d["approved"], d["additional_properties"]) for d in declines] == [
        (request["id"], False, {"declinedBecause": "expired", "expiresAt": EPOCH_MS + 600_000})
    ]
    assert after["pendingApprovals"] == []


def test_an_approval_answered_within_its_lifetime_runs_its_tool(host: ExpiryHost) -> None:
    _, asked = host.post(ASK)
    host.clock.advance(AGENT_TTL.total_seconds() - 1)
    status, answered = host.post({"approvals": [{"id": asked["approvalRequests"][0]["id"], "approved": True}]})

    assert status == 200 and refunds == ["A17"]
    assert "expiredApprovals" not in answered


def test_a_late_answer_is_409_approval_expired_and_changes_nothing(host: ExpiryHost) -> None:
    _, asked = host.post(ASK)
    approval_id = asked["approvalRequests"][0]["id"]
    host.clock.advance(AGENT_TTL.total_seconds() + 1)
    before = (host.get(), host.get("/messages"))
    late_status, late = host.post({"approvals": [{"id": approval_id, "approved": True}]})
    after = (host.get(), host.get("/messages"))
    host.post({"message": "Any news?"})
    later_status, later = host.post({"approvals": [{"id": approval_id, "approved": True}]})

    assert refunds == []
    assert late_status == later_status == 409
    expires_at = asked["approvalRequests"][0]["expiresAt"]
    assert late["error"] == {
        "code": "approval_expired",
        "message": f"Approval '{approval_id}' expired at {expires_at} and counts as declined; its tool does not run. "
        "Nothing was changed; ask for the tool again in a new turn.",
    }
    assert later["error"] == late["error"]
    assert after == before


def test_a_turns_approval_ttl_overrides_the_agents(host: ExpiryHost) -> None:
    _, short = host.post({**ASK, "approvalTtlSeconds": 60})
    _, unlimited = host.post({"message": 'call refund {"order_id": "B2"}', "approvalTtlSeconds": 0})
    host.clock.advance(61)
    _, declining = host.post({"message": "Any news?"})
    host.clock.advance(30 * 24 * 3600)
    status, answered = host.post({"approvals": [{"id": unlimited["approvalRequests"][0]["id"], "approved": True}]})

    assert short["approvalRequests"][0]["expiresAt"] == iso(EPOCH_MS + 60_000)
    assert "expiresAt" not in unlimited["approvalRequests"][0]
    assert [item["id"] for item in declining["expiredApprovals"]] == [short["approvalRequests"][0]["id"]]
    assert status == 200 and "expiredApprovals" not in answered
    assert refunds == ["B2"]


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (-1, "invalid_approval_ttl"),
        (1e10, "invalid_approval_ttl"),
        ("60", "invalid_body"),
        (True, "invalid_body"),
        ([60], "invalid_body"),
    ],
)
def test_an_invalid_approval_ttl_is_400_and_nothing_is_stored(host: ExpiryHost, value: Any, code: str) -> None:
    # A value out of range has its own code; a value of the wrong type is invalid_body, as for every field.
    status, reply = host.post({**ASK, "approvalTtlSeconds": value})
    conversation = host.request("GET", f"{BASE}/c1")

    assert (status, reply["error"]["code"]) == (400, code)
    assert "approvalTtlSeconds" in reply["error"]["message"]
    assert conversation.status == 404 and refunds == []


@pytest.mark.parametrize("value", [-1, float("nan"), datetime.timedelta(days=400), "10m"])
def test_an_invalid_agent_approval_ttl_is_refused_at_startup(value: Any) -> None:
    with pytest.raises(ValueError, match=r"add_agent\('assistant'\): approval_ttl"):
        app_with_approval_ttl(ScriptedChatClient(), ManualClock(), value)


def test_a_streamed_turn_declines_an_expired_approval_too(host: ExpiryHost) -> None:
    _, asked = host.post(ASK)
    host.clock.advance(AGENT_TTL.total_seconds())
    status, turn = host.post({"message": "Any news?", "stream": True})

    assert status == 200 and refunds == []
    assert [item["id"] for item in turn["expiredApprovals"]] == [asked["approvalRequests"][0]["id"]]
    assert declined_results(host.model.calls[-1]) == ["Error: Tool call invocation was rejected by user."]
