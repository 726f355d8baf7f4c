"""Checkpointed turns: a turn re-run after a crash replays the model calls and tools its journal holds.

A crash is a `Crash` (not an `Exception`, so neither core nor the entity catches it) raised inside a model call or
a tool: the entity function never returns, nothing is committed, and the host delivers the same signal again to a
new process (new client, agent and app objects; the same stream store file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Content, Message, tool
from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient, StreamingChatClient

from agent_host import safe_to_repeat
from agent_host._conversation.checkpoints import MAY_HAVE_RUN_REASON
from agent_host._event_loop import AGENT_LOOP
from agent_host._streaming.journal import journal_key
from agent_host._streaming.sqlite_store import SqliteStreamStore

TURN = {"turnId": "t1", "message": 'call book_flight {"city": "Oslo"}'}
JOURNAL = journal_key("conversation_assistant/c1/t1")


class Crash(BaseException):
    """The process dies here."""


class Bookings:
    """A tool with a side effect, counted; it can crash the process after booking."""

    def __init__(self) -> None:
        self.count = 0
        self.crash_after_booking = False

    def tool(self, *, repeatable: bool = False) -> Any:
        @tool(name="book_flight")
        def book_flight(city: str) -> str:
            """Book a flight."""
            self.count += 1
            if self.crash_after_booking:
                raise Crash
            return f"booked {city} #{self.count}"

        return safe_to_repeat(book_flight) if repeatable else book_flight


def crashing_on_call(number: int) -> Callable[[list[Message], Mapping[str, Any]], Message]:
    """The default scripted model, except that its call `number` crashes the process."""
    from chat_clients import default_reply

    calls = 0

    def script(messages: list[Message], options: Mapping[str, Any]) -> Message:
        nonlocal calls
        calls += 1
        if calls == number:
            raise Crash
        return default_reply(messages, calls)

    return script


def run_turn_in_new_process(
    store: SqliteStreamStore, bookings: Bookings, client: ScriptedChatClient, state: str | None, **options: Any
) -> tuple[Any, ScriptedChatClient]:
    driver = driver_for(
        build_app(make_agent(client, tools=[bookings.tool(**options)]), stream_store=store), "assistant", state=state
    )
    return driver, client


def journal(store: SqliteStreamStore) -> list[str]:
    return [event.event for event in AGENT_LOOP.run(store.read(JOURNAL))]


@pytest.fixture
def store(tmp_path: Path) -> SqliteStreamStore:
    opened = SqliteStreamStore(tmp_path / "streams.sqlite3")
    yield opened
    opened.close()


def test_a_turn_crashed_after_its_tool_ran_books_once_and_does_not_repeat_the_first_model_call(
    store: SqliteStreamStore,
) -> None:
    bookings = Bookings()
    first, first_client = run_turn_in_new_process(store, bookings, ScriptedChatClient(crashing_on_call(2)), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    assert bookings.count == 1 and len(first_client.calls) == 2

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), first.state)
    (result,) = again.send(("run", TURN))

    assert not result["isError"], result
    assert bookings.count == 1
    assert len(client.calls) == 1  # only the call that crashed runs again
    assert client.calls[0][-1].contents[0].result == "booked Oslo #1"
    texts = [message["text"] for message in again.decoded()["messages"] if message.get("text")]
    assert texts[-1] == "tool said booked Oslo #1"


def test_a_re_run_turn_stores_what_an_uninterrupted_turn_stores(store: SqliteStreamStore, tmp_path: Path) -> None:
    bookings = Bookings()
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(crashing_on_call(2)), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    again, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), first.state)
    again.send(("run", TURN))
    other = SqliteStreamStore(tmp_path / "other.sqlite3")
    uninterrupted, _ = run_turn_in_new_process(other, Bookings(), ScriptedChatClient(), None)

    uninterrupted.send(("run", TURN))
    other.close()

    def comparable(state: dict[str, Any]) -> list[dict[str, Any]]:
        # Core gives each function call content a random `af-call-<uuid>` id: two runs of core differ there too.
        messages = [{k: v for k, v in message.items() if k != "at"} for message in state["messages"]]
        return json.loads(re.sub(r"af-call-[0-9a-f]{32}", "<af-call>", json.dumps(messages)))

    assert comparable(again.decoded()) == comparable(uninterrupted.decoded())


def test_an_unsafe_tool_interrupted_between_start_and_result_is_asked_about_not_run_again(
    store: SqliteStreamStore,
) -> None:
    bookings = Bookings()
    bookings.crash_after_booking = True
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    assert journal(store) == ["model.response", "tool.started"]
    bookings.crash_after_booking = False

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), first.state)
    (result,) = again.send(("run", TURN))

    assert not result["isError"], result
    assert bookings.count == 1 and client.calls == []
    record = again.decoded()["turns"]["t1"]
    (request,) = record["approvalRequests"]
    assert request["toolName"] == "book_flight" and request["arguments"] == {"city": "Oslo"}
    assert request["reason"] == MAY_HAVE_RUN_REASON


def asked_after_a_crash_between_booking_and_result(
    store: SqliteStreamStore, bookings: Bookings
) -> tuple[Any, ScriptedChatClient, dict[str, Any]]:
    """The unsafe tool booked, then the process died before its result was journaled; the re-run turn asks about it.

    Returns the re-run's driver, its model and the approval request it recorded.
    """
    bookings.crash_after_booking = True
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    bookings.crash_after_booking = False
    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), first.state)
    again.send(("run", TURN))
    (request,) = again.decoded()["turns"]["t1"]["approvalRequests"]
    return again, client, request


def test_approving_a_tool_that_may_have_run_runs_it_again(store: SqliteStreamStore) -> None:
    bookings = Bookings()
    again, _, request = asked_after_a_crash_between_booking_and_result(store, bookings)

    (result,) = again.send(("run", {"turnId": "t2", "approvals": [{"id": request["id"], "approved": True}]}))

    assert not result["isError"], result
    assert bookings.count == 2
    assert again.decoded()["turns"]["t2"]["status"] == "completed"


def test_a_tool_marked_safe_to_repeat_runs_again_without_asking(store: SqliteStreamStore) -> None:
    bookings = Bookings()
    bookings.crash_after_booking = True
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None, repeatable=True)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    bookings.crash_after_booking = False

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), first.state, repeatable=True)
    again.send(("run", TURN))

    assert bookings.count == 2
    record = again.decoded()["turns"]["t1"]
    assert record["status"] == "completed" and not record.get("approvalRequests")
    assert len(client.calls) == 1


def test_the_journal_is_deleted_once_the_turns_commit_is_certain(store: SqliteStreamStore) -> None:
    bookings = Bookings()
    driver, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    driver.send(("run", TURN))
    assert journal(store) == ["model.response", "tool.started", "tool.result", "model.response"]

    driver.send(("run", {"turnId": "t2", "message": "thanks"}))

    assert journal(store) == []


def test_a_turns_journal_outlives_the_batch_that_ran_it_until_that_batch_is_committed(
    store: SqliteStreamStore,
) -> None:
    bookings = Bookings()
    second = {"turnId": "t2", "message": "thanks"}
    lost, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    lost.send(("run", TURN), ("run", second))  # one batch; the host crashes before committing it
    assert journal(store) != []

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    again.send(("run", TURN), ("run", second))  # the batch delivered again
    assert bookings.count == 1 and len(client.calls) == 0  # both turns replayed whole from their journals
    again.send(("run", {"turnId": "t3", "message": "bye"}))

    assert journal(store) == []
    assert again.decoded()["journaledTurns"] == ["t3"]


def test_checkpoints_off_for_an_agent_writes_no_journal(store: SqliteStreamStore) -> None:
    app = build_app(stream_store=store)
    bookings = Bookings()
    app.add_agent(make_agent(ScriptedChatClient(), tools=[bookings.tool()]), checkpoints=False)

    driver_for(app, "assistant").send(("run", TURN))

    assert journal(store) == []


def test_a_failing_store_runs_the_turn_without_checkpoints(store: SqliteStreamStore) -> None:
    store.close()  # every call now raises StreamStoreUnavailableError
    bookings = Bookings()
    driver, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)

    (result,) = driver.send(("run", TURN))

    assert not result["isError"], result
    assert driver.decoded()["turns"]["t1"]["status"] == "completed"
    assert bookings.count == 1


def test_a_streamed_turn_re_run_after_a_crash_replays_its_journal_at_once_then_streams_live(
    store: SqliteStreamStore,
) -> None:
    bookings = Bookings()
    turn = {**TURN, "stream": True}
    first, _ = run_turn_in_new_process(store, bookings, StreamingChatClient(crashing_on_call(2)), None)
    with pytest.raises(Crash):
        first.send(("run", turn))

    again, client = run_turn_in_new_process(store, bookings, StreamingChatClient(), first.state)
    (result,) = again.send(("run", turn))

    assert not result["isError"], result
    assert bookings.count == 1 and len(client.calls) == 1
    events = AGENT_LOOP.run(store.read("conversation_assistant/c1/t1"))
    # The second attempt follows the first's events (ids go on, so Last-Event-ID still works), replays the
    # journaled model call and tool at once, then streams the model call that crashed live.
    restart = next(event.id for event in events if event.data.get("attempt") == 2)
    second = [(event.event, event.data.get("result") or event.data.get("text")) for event in events[restart:]]
    assert second == [
        ("tool.call", None),
        ("tool.result", "booked Oslo #1"),
        ("message.delta", "tool said booked Oslo #1"),
    ]


def test_declining_a_tool_that_may_have_run_tells_the_model_without_running_it(store: SqliteStreamStore) -> None:
    bookings = Bookings()
    again, client, request = asked_after_a_crash_between_booking_and_result(store, bookings)

    (result,) = again.send(("run", {"turnId": "t2", "approvals": [{"id": request["id"], "approved": False}]}))

    assert not result["isError"], result
    assert bookings.count == 1
    assert again.decoded()["turns"]["t2"]["status"] == "completed"
    assert len(client.calls) == 1 and client.calls[0][-1].role == "tool"


def test_tool_calls_a_service_numbers_anew_in_each_response_replay_their_own_results(
    store: SqliteStreamStore,
) -> None:
    def same_id_twice(messages: list[Message], options: Mapping[str, Any]) -> Message:
        results = [c.result for m in messages for c in m.contents if c.type == "function_result"]
        if len(results) < 2:  # two bookings, one per response, each called "call-0"
            return Message(
                "assistant", [Content.from_function_call("call-0", "book_flight", arguments={"city": "Oslo"})]
            )
        if crash_now:
            raise Crash
        return Message("assistant", [" and ".join(results)])

    crash_now = True
    bookings = Bookings()
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(same_id_twice), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    crash_now = False

    again, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(same_id_twice), first.state)
    again.send(("run", TURN))

    assert bookings.count == 2
    texts = [message.get("text") for message in again.decoded()["messages"]]
    assert texts[-1] == "booked Oslo #1 and booked Oslo #2"
