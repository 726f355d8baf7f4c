"""The conversations a process saw watched moments ago: a minute's window, per durable host, bounded, forgettable."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

import agent_host._expiry.recent as recent_module
from agent_host._clock import SYSTEM_CLOCK
from agent_host._contract import AgentRoute
from agent_host._expiry.recent import RecentWatches
from agent_host._expiry.starter import OFF, TurnExpiry


def client(rpc_base_url: str = "http://127.0.0.1:1000/", task_hub: str = "hub") -> Any:
    """What the module reads of a durable client: the binding that names its host."""
    return SimpleNamespace(_orchestration_bindings=SimpleNamespace(rpc_base_url=rpc_base_url, task_hub_name=task_hub))


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    moment = [1000.0]
    monkeypatch.setattr(recent_module.time, "monotonic", lambda: moment[0])
    return moment


def test_a_conversation_is_recent_for_a_minute_after_it_was_seen_watched(now: list[float]) -> None:
    watches = RecentWatches()
    watches.remember(client(), "conversation_assistant", "c1")

    now[0] += 59.9
    within = watches.is_recent(client(), "Conversation_Assistant", "c1")
    now[0] += 0.2
    after = watches.is_recent(client(), "conversation_assistant", "c1")

    assert (within, after) == (True, False)


def test_another_host_task_hub_or_conversation_is_not_recent(now: list[float]) -> None:
    watches = RecentWatches()
    watches.remember(client(), "conversation_assistant", "c1")

    assert not watches.is_recent(client(rpc_base_url="http://127.0.0.1:2000/"), "conversation_assistant", "c1")
    assert not watches.is_recent(client(task_hub="other"), "conversation_assistant", "c1")
    assert not watches.is_recent(client(), "conversation_assistant", "C1")
    assert not watches.is_recent(client(), "conversation_brief", "c1")


def test_a_forgotten_conversation_is_not_recent(now: list[float]) -> None:
    watches = RecentWatches()
    watches.remember(client(), "conversation_assistant", "c1")

    watches.forget(client(), "conversation_assistant", "c1")

    assert not watches.is_recent(client(), "conversation_assistant", "c1")


def test_the_oldest_entries_go_first_past_the_limit(now: list[float]) -> None:
    watches = RecentWatches(limit=2)
    for conversation in ("c1", "c2", "c3"):
        watches.remember(client(), "conversation_assistant", conversation)
    watches.remember(client(), "conversation_assistant", "c2")  # seen again: the newest
    watches.remember(client(), "conversation_assistant", "c4")

    kept = [c for c in ("c1", "c2", "c3", "c4") if watches.is_recent(client(), "conversation_assistant", c)]

    assert kept == ["c2", "c4"]


def test_forgetting_with_nothing_watched_does_not_read_the_client() -> None:
    # With expiry off nothing is ever remembered: a DELETE's forget must not touch the SDK's private binding.
    watches = RecentWatches()

    watches.forget(object(), "conversation_assistant", "c1")  # type: ignore[arg-type]

    assert not watches._seen


def test_a_turn_with_expiry_off_does_not_read_the_client() -> None:
    # Every turn builds a TurnExpiry; with TTL off it must neither look up recent watches nor start anything.
    route = AgentRoute(name="assistant", entity_name="conversation_assistant", history="durable")

    async def turn() -> str:
        expiry = TurnExpiry(object(), route, "c1", SYSTEM_CLOCK)  # type: ignore[arg-type]
        return await expiry.finish(1)

    assert asyncio.run(turn()) == OFF
