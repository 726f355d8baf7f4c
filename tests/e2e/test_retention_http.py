"""Retention over HTTP: change a conversation's mode and budget, and see the effect on its next turn; on both hosts of
the HTTP API (the function app, the standalone worker's ASGI app)."""

from __future__ import annotations

import pytest
from apps import make_agent
from worker_hosting import HttpHost, Serve

from agent_host import HostSettings, OfflineChatClient, RetentionSettings

BASE = "/api/agents/assistant/conversations"
BUDGET = 6144
KEEP_ALL = HostSettings(max_turn_records=4, retention=RetentionSettings(mode="keep_all", max_state_bytes=BUDGET))


@pytest.fixture
def host(serve: Serve) -> HttpHost:
    return serve(lambda: make_agent(OfflineChatClient()), KEEP_ALL)


def fill_until_refused(host: HttpHost, conversation: str) -> dict:
    for number in range(60):
        reply = host.request(
            "POST", f"{BASE}/{conversation}/turns", {"message": f"Turn {number} says something of a decent length."}
        )
        if reply.status != 200:
            return {"status": reply.status, "body": reply.json(), "turns": number}
    raise AssertionError("keep_all never refused a turn")


def test_changing_the_mode_over_http_takes_effect_on_the_next_turn(host: HttpHost) -> None:
    refused = fill_until_refused(host, "c1")
    assert refused["status"] == 507
    assert refused["body"]["error"]["code"] == "state_capacity_exceeded"
    assert f"its {BUDGET}-byte budget" in refused["body"]["error"]["message"]
    before = host.request("GET", f"{BASE}/c1").json()
    assert before["capacityError"]["code"] == "state_capacity_exceeded"
    assert before["stateBytes"] > BUDGET and before["truncation"]["evictedMessages"] == 0

    put = host.request("PUT", f"{BASE}/c1/retention", {"mode": "auto", "maxStateBytes": BUDGET})
    assert put.status == 200
    assert put.json()["retention"] == {
        "mode": "auto",
        "maxStateBytes": BUDGET,
        "highWatermark": 0.85,
        "lowWatermark": 0.7,
    }
    assert put.json()["conversationId"] == "c1"
    unchanged = host.request("GET", f"{BASE}/c1").json()
    assert unchanged["messageCount"] == before["messageCount"]  # nothing is deleted until the next turn

    answer = host.request("POST", f"{BASE}/c1/turns", {"message": "My name is Ada."})
    after = host.request("GET", f"{BASE}/c1").json()

    # The model saw the whole history; the eviction came after the answer.
    assert answer.status == 200 and answer.json()["text"] == (
        f"[offline model] Noted: your name is Ada. ({before['messageCount']} earlier messages in this conversation.)"
    )
    assert after["retention"]["mode"] == "auto"
    assert after["truncation"]["evictedMessages"] > 0
    assert after["stateBytes"] <= BUDGET * 0.85
    assert "capacityError" not in after


def test_retention_put_creates_a_conversation_that_the_next_turn_uses(host: HttpHost) -> None:
    put = host.request(
        "PUT",
        f"{BASE}/fresh/retention",
        {"mode": "follow_compaction", "maxStateBytes": 65536, "highWatermark": 0.9, "lowWatermark": 0.5},
    )
    host.request("POST", f"{BASE}/fresh/turns", {"message": "hello"})
    conversation = host.request("GET", f"{BASE}/fresh").json()

    assert put.status == 200
    assert conversation["retention"] == {
        "mode": "follow_compaction",
        "maxStateBytes": 65536,
        "highWatermark": 0.9,
        "lowWatermark": 0.5,
    }
    assert conversation["turnCount"] == 1


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            {"mode": "sometimes", "maxStateBytes": 65536},
            "mode: Input should be 'keep_all', 'auto' or 'follow_compaction'",
        ),
        ({"mode": "auto", "maxStateBytes": 100}, "maxStateBytes: Input should be greater than or equal to 4096"),
        ({"mode": "auto"}, "maxStateBytes: Field required"),
        (
            {"mode": "auto", "maxStateBytes": 65536, "highWatermark": 0.6, "lowWatermark": 0.7},
            "the low watermark (0.7) must be below the high watermark (0.6)",
        ),
    ],
)
def test_invalid_retention_is_a_400_naming_the_valid_values(host: HttpHost, body: dict, named: str) -> None:
    reply = host.request("PUT", f"{BASE}/c2/retention", body)

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "invalid_retention"
    assert named in reply.json()["error"]["message"]
    assert host.request("GET", f"{BASE}/c2").status == 404  # nothing was created


def test_retention_route_errors(host: HttpHost) -> None:
    wrong_method = host.request("POST", f"{BASE}/c3/retention", {"mode": "auto", "maxStateBytes": 65536})
    not_json = host.request(
        "PUT", f"{BASE}/c3/retention", raw=b'{"mode": "auto"', headers={"Content-Type": "application/json"}
    )
    unknown_agent = host.request("PUT", "/api/agents/nobody/conversations/c3/retention", {"mode": "auto"})

    assert (wrong_method.status, wrong_method.json()["error"]["code"]) == (405, "method_not_allowed")
    assert (not_json.status, not_json.json()["error"]["code"]) == (400, "invalid_json")
    assert (unknown_agent.status, unknown_agent.json()["error"]["code"]) == (404, "agent_not_found")
