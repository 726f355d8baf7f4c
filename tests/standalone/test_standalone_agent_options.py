"""`AgentWorker.add_agent` takes the function app's per-agent options and they act as there: an approval left
unanswered past the agent's `approval_ttl` is declined by the next turn, and `checkpoints` decides whether a turn's
steps are journaled in the worker's turn stream store while it runs."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from agent_framework import tool
from apps import make_agent
from chat_clients import ScriptedChatClient
from clocks import EPOCH_MS, ManualClock
from durabletask.worker import TaskHubGrpcWorker

from agent_host import HostSettings
from agent_host._event_loop import AGENT_LOOP
from agent_host._streaming.journal import journal_key
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host.worker import AgentWorker, worker_options

from .workers import agent_client

APPROVAL_TTL = datetime.timedelta(minutes=10)


@contextmanager
def worker_with(hub: str, agent: Any, clock: ManualClock, store: SqliteStreamStore, **options: Any) -> Iterator[None]:
    """A started worker hosting `agent` with `add_agent(**options)`, on `clock`, journaling into `store`."""
    worker = TaskHubGrpcWorker(host_address=hub, **worker_options())
    hosted = AgentWorker(worker, settings=HostSettings(), clock=clock, stream_store=store)
    hosted.add_agent(agent, **options)
    worker.start()
    try:
        yield
    finally:
        worker.stop()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStreamStore]:
    opened = SqliteStreamStore(tmp_path / "streams.sqlite3")
    yield opened
    opened.close()


def test_an_approval_past_the_agents_approval_ttl_is_declined_by_the_next_turn(
    hub: str, store: SqliteStreamStore
) -> None:
    refunds: list[str] = []

    @tool(approval_mode="always_require")
    def refund(order_id: str) -> str:
        """Refund an order."""
        refunds.append(order_id)
        return f"Refunded {order_id}."

    clock = ManualClock()
    agent = make_agent(ScriptedChatClient(), tools=[refund])
    with worker_with(hub, agent, clock, store, approval_ttl=APPROVAL_TTL), agent_client(hub, clock=clock) as client:
        conversation = client.conversation("assistant", "c1")
        asked = conversation.send('call refund {"order_id": "A17"}')
        clock.advance(APPROVAL_TTL.total_seconds())
        declining = conversation.send("Any news?")
        after = conversation.read()

    request = asked["approvalRequests"][0]
    expires_at = datetime.datetime.fromtimestamp((EPOCH_MS + 600_000) / 1000, tz=datetime.UTC)
    assert request["toolName"] == "refund"
    assert request["expiresAt"] == expires_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert declining["expiredApprovals"] == [{**request, "declinedBecause": "expired"}]
    assert refunds == []
    assert after["pendingApprovals"] == []


@pytest.mark.parametrize(("checkpoints", "journaled"), [(None, ["model.response"]), (False, [])])
def test_checkpoints_decide_whether_a_running_turn_is_journaled(
    hub: str, store: SqliteStreamStore, checkpoints: bool | None, journaled: list[str]
) -> None:
    booking = threading.Event()
    release = threading.Event()

    @tool
    def book_flight(city: str) -> str:
        """Book a flight."""
        booking.set()
        release.wait(30)
        return f"booked {city}"

    clock = ManualClock()
    agent = make_agent(ScriptedChatClient(), tools=[book_flight])
    with worker_with(hub, agent, clock, store, checkpoints=checkpoints), agent_client(hub, clock=clock) as client:
        conversation = client.conversation("assistant", "c1")
        try:
            pending = conversation.send('call book_flight {"city": "Oslo"}', wait=False)
            assert booking.wait(30)
            key = journal_key(f"conversation_assistant/c1/{pending['turnId']}")
            while_running = [event.event for event in AGENT_LOOP.run(store.read(key))]
        finally:
            release.set()
        answered = conversation.turn(pending["turnId"], timeout_seconds=30)
        conversation.send("Thanks.")  # the next operation deletes the journal of a turn whose commit it sees
        after = [event.event for event in AGENT_LOOP.run(store.read(key))]

    assert while_running == journaled
    assert answered["status"] == "completed" and "booked Oslo" in answered["text"]
    assert after == []
