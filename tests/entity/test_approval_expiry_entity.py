"""Approval lifetimes in the entity, through the real entity function with the host's batch format: the entity is the
authority on expiry, whoever signalled the turn and whenever it was checked before."""

from __future__ import annotations

import datetime
from typing import Any

from agent_framework import tool
from apps import build_app, driver_for, make_agent
from batches import EntityDriver
from chat_clients import ScriptedChatClient
from clocks import EPOCH_MS, ManualClock

refunds: list[str] = []


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    refunds.append(order_id)
    return f"Refunded {order_id}."


def expiring_driver(clock: ManualClock) -> EntityDriver:
    app = build_app(clock=clock)
    app.add_agent(make_agent(ScriptedChatClient(), tools=[refund]), approval_ttl=datetime.timedelta(minutes=10))
    return driver_for(app, "assistant")


def run(driver: EntityDriver, payload: dict[str, Any]) -> dict[str, Any]:
    (result,) = driver.send(("run", payload))
    assert not result["isError"], result
    return driver.decoded()


def test_an_answer_that_is_late_when_its_turn_runs_fails_that_turn_and_changes_nothing_else() -> None:
    # The route checked the answer in time; the turn ran after the lifetime (queued behind others, say).
    refunds.clear()
    clock = ManualClock()
    driver = expiring_driver(clock)
    asked = run(driver, {"turnId": "00000000001asked", "message": 'call refund {"order_id": "A17"}'})
    (pending,) = asked["pendingApprovals"]
    clock.advance(600)
    answered = run(driver, {"turnId": "00000000002late", "approvals": [{"id": pending["id"], "approved": True}]})

    assert pending["expiresAt"] == EPOCH_MS + 600_000
    assert refunds == []
    assert answered["turns"]["00000000002late"]["error"]["code"] == "approval_expired"
    assert answered["pendingApprovals"] == asked["pendingApprovals"]
    assert answered["messages"] == asked["messages"]


def test_a_redelivered_declining_turn_declines_once() -> None:
    refunds.clear()
    clock = ManualClock()
    driver = expiring_driver(clock)
    run(driver, {"turnId": "00000000001asked", "message": 'call refund {"order_id": "A17"}'})
    clock.advance(601)
    first = run(driver, {"turnId": "00000000002next", "message": "Any news?"})
    again = run(driver, {"turnId": "00000000002next", "message": "Any news?"})

    declines = [
        content
        for record in again["messages"]
        for content in record.get("contents", [])
        if content["type"] == "function_approval_response"
    ]
    assert again == first
    assert [d["additional_properties"]["declinedBecause"] for d in declines] == ["expired"]
    assert [item["id"] for item in first["turns"]["00000000002next"]["expiredApprovals"]] == [declines[0]["id"]]
    assert "pendingApprovals" not in first and refunds == []
