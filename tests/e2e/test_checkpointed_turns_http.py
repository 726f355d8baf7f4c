"""Checkpointed turns on the local host: a turn whose commit was lost is delivered again and replays its journal."""

from __future__ import annotations

from pathlib import Path

from agent_framework import tool
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient
from faults import crash_before_entity_commit
from hosting import RunningHost

from agent_host._streaming.sqlite_store import SqliteStreamStore

BASE = "/api/agents/assistant/conversations"


def test_a_tool_calling_turn_whose_commit_was_lost_books_once_and_calls_the_model_once_a_step(tmp_path: Path) -> None:
    bookings: list[str] = []

    @tool
    def book_flight(city: str) -> str:
        """Book a flight."""
        bookings.append(city)
        return f"booked {city}"

    client = ScriptedChatClient()
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    running = RunningHost(lambda: build_app(make_agent(client, tools=[book_flight]), stream_store=store), tmp_path)
    try:
        assert running.host is not None
        crashes: list[int] = []

        def crash_once(name: str, key: str, batch: list[object]) -> bool:
            crashes.append(len(batch))
            return len(crashes) == 1

        crash_before_entity_commit(running.host.scheduler, crash_once)

        reply = running.request("POST", f"{BASE}/c1/turns", {"message": 'call book_flight {"city": "Oslo"}'})
        running.wait_idle()

        assert reply.status == 200 and len(crashes) == 2
        assert reply.json()["text"] == "tool said booked Oslo"
        assert bookings == ["Oslo"]  # the redelivered turn replayed the tool's journaled result
        assert len(client.calls) == 2  # one call per step: the redelivery replayed both
    finally:
        running.stop()
        store.close()
