"""A turn id of a conversation nothing was ever accepted for is refused at once, on every route that reads a turn:
the conversation client says no turn can be on its way (`may_hold_queued_turns`), so nothing waits or polls."""

from __future__ import annotations

import time

import pytest
from apps import make_agent
from clocks import ManualClock
from front_doors import MemoryFunctionApp, memory_app

from agent_host import OfflineChatClient
from agent_host._turn_ids import format_turn_id

BASE = "/api/agents/assistant/conversations"
CLOCK = ManualClock()
# Issued just now, so its time alone cannot rule out a turn still queued: only the conversation client can.
MADE_UP = format_turn_id(CLOCK.now_ms(), "", "00000000")


@pytest.fixture(scope="module")
def host() -> MemoryFunctionApp:
    return memory_app(make_agent(OfflineChatClient()), clock=CLOCK)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"{BASE}/never/turns/{MADE_UP}"),
        ("POST", f"{BASE}/never/turns/{MADE_UP}/cancel"),
        ("GET", f"{BASE}/never/turns/{MADE_UP}/stream"),
    ],
)
def test_a_made_up_turn_of_a_conversation_that_never_existed_is_404_at_once(
    host: MemoryFunctionApp, method: str, path: str
) -> None:
    started = time.monotonic()
    reply = host.request(method, path)
    elapsed = time.monotonic() - started

    assert (reply.status, reply.json()["error"]["code"]) == (404, "turn_not_found")
    assert MADE_UP in reply.json()["error"]["message"]
    assert elapsed < 5  # answered, not waited on (a wait would take the route's default of 30 s or more)
    assert host.request("GET", f"{BASE}/never").status == 404  # and nothing was created
