"""Checkpointed turns: a turn re-run after a crash replays the model calls and tools its journal holds.

A crash is a `Crash` (not an `Exception`, so neither core nor the entity catches it) raised inside a model call or
a tool: the entity function never returns, nothing is committed, and the host delivers the same signal again to a
new process (new client, agent and app objects; the same stream store file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Content, Message, tool
from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient, StreamingChatClient

from agent_host import StreamEvent, TurnStreamStore, safe_to_repeat
from agent_host._conversation.checkpoints import MAY_HAVE_RUN_REASON
from agent_host._event_loop import AGENT_LOOP
from agent_host._streaming.journal import JOURNAL_SUFFIX, MODEL_RESPONSE, TOOL_RESULT, TOOL_STARTED, journal_key
from agent_host._streaming.sqlite_store import SqliteStreamStore
from bench.checkpoint_cost import CountingStore

TURN = {"turnId": "t1", "message": 'call book_flight {"city": "Oslo"}'}
JOURNAL = journal_key("conversation_assistant/c1/t1")


class Crash(BaseException):
    """The process dies here."""


class Bookings:
    """A tool with a side effect, counted; it can crash the process after booking a flight to one of some cities."""

    def __init__(self) -> None:
        self.count = 0
        self.crash_after_booking: set[str] = set()

    def tool(self, *, repeatable: bool = False, approval: bool = False) -> Any:
        @tool(name="book_flight", approval_mode="always_require" if approval else "never_require")
        def book_flight(city: str) -> str:
            """Book a flight."""
            self.count += 1
            if city in self.crash_after_booking:
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
    store: TurnStreamStore, bookings: Bookings, client: ScriptedChatClient, state: str | None, **options: Any
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
    bookings.crash_after_booking = {"Oslo"}
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    assert journal(store) == ["model.response"]
    bookings.crash_after_booking = set()

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
    bookings.crash_after_booking = {"Oslo"}
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    bookings.crash_after_booking = set()
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
    bookings.crash_after_booking = {"Oslo"}
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None, repeatable=True)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    bookings.crash_after_booking = set()

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
    assert journal(store) == ["model.response", "tool.result", "model.response"]

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


def booking_two_cities(messages: list[Message], options: Mapping[str, Any]) -> Message:
    """A model that books Oslo and Rome in one response (two parallel tool calls), then says what the tools said."""
    results = [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]
    if results:
        return Message("assistant", [" and ".join(results)])
    calls = [
        Content.from_function_call(f"call-{city}", "book_flight", arguments={"city": city}) for city in ("Oslo", "Rome")
    ]
    return Message("assistant", calls)


def in_order(client: ScriptedChatClient) -> ScriptedChatClient:
    """`client`, running the tool calls of one response one after another (so a crash strikes between them)."""
    client.function_invocation_configuration["allow_concurrent_invocation"] = False
    return client


def test_a_turn_writes_its_journal_once_a_model_call_and_once_a_tool_result(store: SqliteStreamStore) -> None:
    counting = CountingStore(store)
    bookings = Bookings()
    driver, client = run_turn_in_new_process(counting, bookings, ScriptedChatClient(booking_two_cities), None)

    (result,) = driver.send(("run", TURN))

    assert not result["isError"], result
    assert len(client.calls) == 2 and bookings.count == 2
    # Each write reached the SQLite store as one append of one entry: a write a model call and one a tool result.
    assert counting.journal_writes == 4
    assert counting.journal_appends == {MODEL_RESPONSE: 2, TOOL_RESULT: 2}
    assert journal(store) == [MODEL_RESPONSE, TOOL_RESULT, TOOL_RESULT, MODEL_RESPONSE]


class DyingAfterTheFirstModelResponse(SqliteStreamStore):
    """The SQLite store of a process that dies right after it journaled its first model response."""

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        await super().append(stream, events)
        if stream.endswith(JOURNAL_SUFFIX) and any(event.event == MODEL_RESPONSE for event in events):
            raise Crash


def test_a_crash_after_the_model_asked_for_a_tool_and_before_it_started_asks_about_the_tool(tmp_path: Path) -> None:
    # Where the guarantee ends: the journaled response is all a re-run knows, so it asks about a tool that never ran.
    bookings = Bookings()
    dying = DyingAfterTheFirstModelResponse(tmp_path / "streams.sqlite3")
    first, _ = run_turn_in_new_process(dying, bookings, ScriptedChatClient(), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    dying.close()
    assert bookings.count == 0

    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), first.state)
    again.send(("run", TURN))
    store.close()

    assert bookings.count == 0 and client.calls == []
    (request,) = again.decoded()["turns"]["t1"]["approvalRequests"]
    assert request["toolName"] == "book_flight" and request["reason"] == MAY_HAVE_RUN_REASON


def test_of_parallel_tool_calls_a_re_run_replays_the_finished_and_asks_about_the_one_in_flight(
    store: SqliteStreamStore,
) -> None:
    bookings = Bookings()
    bookings.crash_after_booking = {"Rome"}
    first, _ = run_turn_in_new_process(store, bookings, in_order(ScriptedChatClient(booking_two_cities)), None)
    with pytest.raises(Crash):
        first.send(("run", TURN))
    assert journal(store) == [MODEL_RESPONSE, TOOL_RESULT]  # Oslo's result; Rome booked, then the process died
    bookings.crash_after_booking = set()

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(booking_two_cities), first.state)
    (result,) = again.send(("run", TURN))

    assert not result["isError"], result
    assert bookings.count == 2 and client.calls == []  # neither booked again, the model not asked again
    (request,) = again.decoded()["turns"]["t1"]["approvalRequests"]
    assert request["arguments"] == {"city": "Rome"} and request["reason"] == MAY_HAVE_RUN_REASON


def test_of_parallel_tool_calls_that_all_finished_a_re_run_replays_both_and_asks_nothing(
    store: SqliteStreamStore,
) -> None:
    bookings = Bookings()
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(booking_two_cities), None)
    first.send(("run", TURN))  # the batch's commit is lost: the same turn is delivered again

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(booking_two_cities), None)
    (result,) = again.send(("run", TURN))

    assert not result["isError"], result
    assert bookings.count == 2 and client.calls == []
    record = again.decoded()["turns"]["t1"]
    assert record["status"] == "completed" and not record.get("approvalRequests")
    assert again.decoded()["messages"][-1]["text"] == "booked Oslo #1 and booked Rome #2"


def test_a_tool_that_needs_an_approval_is_not_said_to_have_maybe_run_by_a_re_run(store: SqliteStreamStore) -> None:
    bookings = Bookings()
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None, approval=True)
    first.send(("run", TURN))  # the turn asks for the approval; its commit is lost
    assert journal(store) == [MODEL_RESPONSE]

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None, approval=True)
    again.send(("run", TURN))

    assert bookings.count == 0 and client.calls == []
    (request,) = again.decoded()["turns"]["t1"]["approvalRequests"]
    assert request["toolName"] == "book_flight" and request.get("reason") is None  # core's own approval request
    (result,) = again.send(("run", {"turnId": "t2", "approvals": [{"id": request["id"], "approved": True}]}))
    assert not result["isError"], result
    assert bookings.count == 1


def test_a_crash_while_an_approved_tool_runs_asks_about_it_again(store: SqliteStreamStore) -> None:
    # An approved call runs before the turn's first model call: no journaled response asked for it, its start is.
    bookings = Bookings()
    asked, _, request = asked_after_a_crash_between_booking_and_result(store, bookings)
    approve = {"turnId": "t2", "approvals": [{"id": request["id"], "approved": True}]}
    bookings.crash_after_booking = {"Oslo"}
    with pytest.raises(Crash):
        asked.send(("run", approve))
    assert [event.event for event in AGENT_LOOP.run(store.read(journal_key("conversation_assistant/c1/t2")))] == [
        TOOL_STARTED
    ]
    bookings.crash_after_booking = set()

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), asked.state)
    again.send(("run", approve))

    assert bookings.count == 2 and client.calls == []
    (asked_again,) = again.decoded()["turns"]["t2"]["approvalRequests"]
    assert asked_again["toolName"] == "book_flight" and asked_again["reason"] == MAY_HAVE_RUN_REASON


def as_an_older_writer_wrote_it(store: SqliteStreamStore) -> None:
    """Rewrite the journal of turn t1 as writers before this one did: a `tool.started` before each tool's result."""
    entries: list[tuple[str, dict[str, Any]]] = []
    for event in AGENT_LOOP.run(store.read(JOURNAL)):
        if event.event == TOOL_RESULT:
            started = {"callId": event.data["callId"], "afterCall": event.data["afterCall"], "tool": "book_flight"}
            entries.append((TOOL_STARTED, started))
        entries.append((event.event, event.data))
    AGENT_LOOP.run(store.delete([JOURNAL]))
    AGENT_LOOP.run(store.append(JOURNAL, [StreamEvent(number, *entry) for number, entry in enumerate(entries, 1)]))


def test_a_journal_an_older_writer_wrote_is_replayed(store: SqliteStreamStore) -> None:
    bookings = Bookings()
    first, _ = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    first.send(("run", TURN))  # its commit is lost
    as_an_older_writer_wrote_it(store)
    assert journal(store) == [MODEL_RESPONSE, TOOL_STARTED, TOOL_RESULT, MODEL_RESPONSE]

    again, client = run_turn_in_new_process(store, bookings, ScriptedChatClient(), None)
    (result,) = again.send(("run", TURN))

    assert not result["isError"], result
    assert bookings.count == 1 and client.calls == []
    record = again.decoded()["turns"]["t1"]
    assert record["status"] == "completed" and not record.get("approvalRequests")
    assert again.decoded()["messages"][-1]["text"] == "tool said booked Oslo #1"
