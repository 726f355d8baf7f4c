"""Persisted sessions: provider state, state types and unserializable values, through entity batches."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from agent_framework import ContextProvider, register_state_type
from agent_framework._harness._todo import TodoItem
from agent_framework._serialization import SerializationMixin
from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient


class TurnCounter(ContextProvider):
    """Counts the turns of a session in its own session state."""

    def __init__(self) -> None:
        super().__init__("turn_counter")
        self.seen: list[int] = []

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        state["turns"] = state.get("turns", 0) + 1
        self.seen.append(state["turns"])


def test_provider_state_keeps_counting_across_ten_cold_starts() -> None:
    stored: str | None = None
    counters = []
    for number in range(10):
        counter = TurnCounter()  # a fresh process every turn: new provider, agent and app
        counters.append(counter)
        driver = driver_for(build_app(make_agent(ScriptedChatClient(), context_providers=[counter])), "assistant")
        driver.state = stored
        driver.run_turn(f"t{number}", f"message {number}")
        stored = driver.state

    assert [c.seen[0] for c in counters] == list(range(1, 11))
    state = json.loads(stored)
    assert state["session"]["state"]["turn_counter"] == {"turns": 10}
    # The durable history slice is derived from the transcript and is not stored a second time.
    assert "in_memory" not in state["session"]["state"]
    assert stored.count('"message 3"') == 1


class Preferences(SerializationMixin):
    """A user state type: registered with the app, it comes back as itself after a cold start."""

    def __init__(self, color: str = "") -> None:
        self.color = color


class RemembersPreferences(ContextProvider):
    def __init__(self) -> None:
        super().__init__("prefs")
        self.loaded: list[Any] = []

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        self.loaded.append((state.get("value"), state.get("todo")))
        state["value"] = Preferences("teal")
        state["todo"] = TodoItem(id=1, title="core type")


def test_registered_and_core_state_types_restore_as_their_classes_after_a_cold_start() -> None:
    first = driver_for(
        build_app(
            make_agent(ScriptedChatClient(), context_providers=[RemembersPreferences()]), state_types=[Preferences]
        ),
        "assistant",
    )
    first.run_turn("t1", "hi")
    provider = RemembersPreferences()
    second = driver_for(
        build_app(make_agent(ScriptedChatClient(), context_providers=[provider]), state_types=[Preferences]),
        "assistant",
        state=first.state,
    )

    second.run_turn("t2", "again")

    value, todo = provider.loaded[0]
    assert isinstance(value, Preferences) and value.color == "teal"
    assert isinstance(todo, TodoItem) and todo.title == "core type"


def test_a_state_type_id_collision_is_a_startup_error() -> None:
    class Clash(SerializationMixin):
        def __init__(self) -> None:
            pass

    register_state_type(Preferences)  # already registered by the test above or here: harmless

    with pytest.raises(ValueError, match="cannot be registered"):
        build_app(make_agent(ScriptedChatClient()), state_types=[Clash, type("Preferences", (SerializationMixin,), {})])


class Unserializable(ContextProvider):
    def __init__(self, poison_on: int) -> None:
        super().__init__("fragile")
        self.poison_on = poison_on

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        state["count"] = state.get("count", 0) + 1
        if state["count"] == self.poison_on:
            state["socket"] = object()


def test_unserializable_session_keeps_the_last_good_one_and_still_delivers_the_answer(caplog) -> None:
    driver = driver_for(build_app(make_agent(ScriptedChatClient(), context_providers=[Unserializable(2)])), "assistant")
    driver.run_turn("t1", "one")

    with caplog.at_level(logging.WARNING, logger="agent_host.sessions"):
        record = driver.run_turn("t2", "two")

    assert record["status"] == "completed" and record["text"] == "reply 2: two"
    state = driver.decoded()
    assert state["session"]["state"]["fragile"] == {"count": 1}
    assert [m["text"] for m in state["messages"]] == ["one", "reply 1: one", "two", "reply 2: two"]
    assert "'fragile'" in caplog.text and "last good session" in caplog.text


def test_core_session_id_is_stable_per_conversation_and_distinct_per_agent() -> None:
    seen: list[str] = []

    class SessionIdProbe(ContextProvider):
        async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
            seen.append(session.session_id)

    for name in ("alpha", "beta"):
        driver = driver_for(
            build_app(make_agent(ScriptedChatClient(), name, context_providers=[SessionIdProbe("p")])), name
        )
        driver.run_turn("t1", "one")
        driver.run_turn("t2", "two")

    assert seen == ["alpha.c1", "alpha.c1", "beta.c1", "beta.c1"]
