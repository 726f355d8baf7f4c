"""Streamed turns through the entity: the stream they write, callbacks, and a stored outcome like a waited turn's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_framework import AgentResponse, AgentResponseUpdate
from apps import build_app, driver_for, make_agent
from chat_clients import StreamingChatClient
from streams import FailingTurnStreamStore, MemoryTurnStreamStore, cancel_order, get_weather

from agent_host import AgentCallbackContext, HostSettings
from agent_host._streaming.channel import stream_key
from agent_host._streaming.journal import JOURNAL_SUFFIX

STREAM = stream_key("conversation_assistant", "c1", "t1")


def event_streams(keys) -> list[str]:
    """The turns' event streams among stream keys, without the turn controls (`turn_controls.py`) and checkpoint
    journals (`journal.py`) beside them."""
    return sorted(key for key in keys if "." not in key.rsplit("/", 1)[1] and not key.endswith(JOURNAL_SUFFIX))


TIMES = ("at", "createdAt", "updatedAt")


class RecordingCallback:
    """Keeps what it is called with."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, AgentCallbackContext]] = []
        self.responses: list[tuple[AgentResponse, AgentCallbackContext]] = []

    async def on_streaming_response_update(self, update: AgentResponseUpdate, context: AgentCallbackContext) -> None:
        self.updates.append((update.text, context))

    def on_agent_response(self, response: AgentResponse, context: AgentCallbackContext) -> None:
        self.responses.append((response, context))


class RaisingCallback:
    """Raises from both methods."""

    def on_streaming_response_update(self, update: AgentResponseUpdate, context: AgentCallbackContext) -> None:
        raise RuntimeError("push service down")

    async def on_agent_response(self, response: AgentResponse, context: AgentCallbackContext) -> None:
        raise RuntimeError("push service down")


def without_times(state: str | None) -> Any:
    """A stored state with every timestamp removed (the two runs being compared happen at different times)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in TIMES}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    assert state is not None
    return strip(json.loads(state))


def run(driver: Any, turn_id: str, message: str, *, stream: bool = True) -> dict[str, Any]:
    (result,) = driver.send(("run", {"turnId": turn_id, "message": message, "stream": stream}))
    assert not result["isError"], result
    return json.loads(driver.state)["turns"][turn_id]


def test_a_streamed_turn_writes_its_text_word_by_word_and_stores_what_a_waited_turn_stores() -> None:
    store = MemoryTurnStreamStore()
    streamed = driver_for(build_app(make_agent(StreamingChatClient()), stream_store=store), "assistant")
    # A store of its own too: both sides keep checkpoint journals, so both states list them.
    waited_app = build_app(make_agent(StreamingChatClient()), stream_store=MemoryTurnStreamStore())
    waited = driver_for(waited_app, "assistant")

    for turn_id, text in [("t1", "My name is Ada and I like long walks"), ("t2", "What is my name?")]:
        run(streamed, turn_id, text)
        run(waited, turn_id, text, stream=False)

    assert without_times(streamed.state) == without_times(waited.state)
    events = store.events(STREAM)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert events[0].event == "turn.started" and events[0].data == {"turnId": "t1", "attempt": 1}
    deltas = [e.data for e in events if e.event == "message.delta"]
    assert "".join(d["text"] for d in deltas) == "reply 1: My name is Ada and I like long walks"
    assert {(d["messageId"], d["role"]) for d in deltas} == {("t1.0", "assistant")}
    assert store.events(stream_key("conversation_assistant", "c1", "t2"))[0].data["turnId"] == "t2"


def test_a_tool_call_is_streamed_whole_before_its_result() -> None:
    store = MemoryTurnStreamStore()
    agent = make_agent(StreamingChatClient(), tools=[get_weather])
    driver = driver_for(build_app(agent, stream_store=store), "assistant")

    record = run(driver, "t1", 'call get_weather {"city": "Paris"}')

    assert record["status"] == "completed"
    events = [(e.event, e.data) for e in store.events(STREAM) if e.event.startswith("tool.")]
    assert events == [
        ("tool.call", {"callId": "call-1", "name": "get_weather", "arguments": {"city": "Paris"}}),
        ("tool.result", {"callId": "call-1", "result": "sunny in Paris"}),
    ]
    deltas = [e.data["text"] for e in store.events(STREAM) if e.event == "message.delta"]
    assert "".join(deltas) == "tool said sunny in Paris"


def test_a_turn_not_asked_to_stream_writes_no_stream() -> None:
    store = MemoryTurnStreamStore()
    driver = driver_for(build_app(make_agent(StreamingChatClient()), stream_store=store), "assistant")

    run(driver, "t1", "hello", stream=False)

    assert event_streams(store.streams) == []  # only its running mark, which a cancel reads


def test_callbacks_get_every_update_and_the_answer_naming_agent_conversation_and_turn() -> None:
    callback = RecordingCallback()
    app = build_app(default_callback=callback)
    app.add_agent(make_agent(StreamingChatClient()))
    driver = driver_for(app, "assistant")

    run(driver, "t1", "hello there", stream=False)  # a callback streams every turn, asked or not

    assert "".join(text for text, _ in callback.updates) == "reply 1: hello there"
    (response, context), *more = callback.responses
    assert more == []
    assert response.text == "reply 1: hello there"
    assert (context.agent_name, context.conversation_id, context.turn_id) == ("assistant", "c1", "t1")
    assert (context.session_id, context.correlation_id, context.request_message) == ("c1", "t1", "hello there")
    assert {id(c) for _, c in callback.updates} == {id(context)}


def test_an_agents_own_callback_wins_over_the_apps_default() -> None:
    default, own = RecordingCallback(), RecordingCallback()
    app = build_app(default_callback=default)
    app.add_agent(make_agent(StreamingChatClient()), callback=own)

    run(driver_for(app, "assistant"), "t1", "hi")

    assert (len(default.responses), len(own.responses)) == (0, 1)


def test_a_callback_that_raises_is_logged_and_the_turn_completes(caplog: pytest.LogCaptureFixture) -> None:
    app = build_app(default_callback=RaisingCallback())
    app.add_agent(make_agent(StreamingChatClient()))

    record = run(driver_for(app, "assistant"), "t1", "say three words")

    warnings = [entry.getMessage() for entry in caplog.records if entry.name == "agent_host.callbacks"]
    assert record["status"] == "completed"
    # One warning per callback method and exception type, not one per update.
    assert [message.split(";")[0] for message in warnings] == [
        "Callback RaisingCallback.on_streaming_response_update raised RuntimeError: push service down",
        "Callback RaisingCallback.on_agent_response raised RuntimeError: push service down",
    ]


class LegacyThreadCallback:
    """Reads the context as agent-framework-azurefunctions' older callbacks do, and an attribute no host has."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.seen: list[Any] = []

    def on_streaming_response_update(self, update: AgentResponseUpdate, context: AgentCallbackContext) -> None:
        self.seen.append(getattr(context, self.attribute))

    def on_agent_response(self, response: AgentResponse, context: AgentCallbackContext) -> None:
        self.seen.append(getattr(context, self.attribute))


def test_a_callback_reads_the_conversation_id_as_thread_id_without_a_warning() -> None:
    callback = LegacyThreadCallback("thread_id")
    app = build_app(default_callback=callback)
    app.add_agent(make_agent(StreamingChatClient()))

    record = run(driver_for(app, "assistant"), "t1", "hi")

    assert record["status"] == "completed"
    assert set(callback.seen) == {"c1"} and len(callback.seen) > 1


def test_a_callback_failing_on_an_attribute_names_the_attribute_in_its_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = build_app(default_callback=LegacyThreadCallback("channel_id"))
    app.add_agent(make_agent(StreamingChatClient()))

    run(driver_for(app, "assistant"), "t1", "hi")

    warnings = [entry for entry in caplog.records if entry.name == "agent_host.callbacks"]
    assert len(warnings) == 2
    assert "AttributeError: 'AgentCallbackContext' object has no attribute 'channel_id'" in warnings[0].getMessage()


def test_a_stream_store_that_fails_costs_the_stream_not_the_turn() -> None:
    store = FailingTurnStreamStore()
    driver = driver_for(build_app(make_agent(StreamingChatClient()), stream_store=store), "assistant")

    record = run(driver, "t1", "hi")

    assert record["status"] == "completed"
    assert store.streams == {}


def test_a_rerun_of_the_same_operation_continues_the_stream_as_a_second_attempt() -> None:
    # A crash before the commit delivers the same operation again against the state before it.
    store = MemoryTurnStreamStore()
    driver = driver_for(build_app(make_agent(StreamingChatClient()), stream_store=store), "assistant")
    before = driver.state

    run(driver, "t1", "hi")
    driver.state = before
    run(driver, "t1", "hi")

    events = store.events(STREAM)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    starts = [(e.id, e.data["attempt"]) for e in events if e.event == "turn.started"]
    assert [attempt for _, attempt in starts] == [1, 2]
    assert starts[1][0] > max(e.id for e in events if e.event == "message.delta" and e.id < starts[1][0])


def test_streams_go_with_the_receipts_retention_drops() -> None:
    store = MemoryTurnStreamStore()
    app = build_app(make_agent(StreamingChatClient()), stream_store=store, settings=HostSettings(max_turn_records=2))
    driver = driver_for(app, "assistant")

    for number in range(1, 4):
        run(driver, f"t{number}", f"turn {number}")

    assert [key for key in store.deleted if not key.endswith(JOURNAL_SUFFIX)] == [
        STREAM,
        f"{STREAM}.cancel",
        f"{STREAM}.running",
    ]  # the turn's controls go with it, and its journal once its commit is certain
    assert event_streams(store.streams) == [stream_key("conversation_assistant", "c1", t) for t in ("t2", "t3")]


def test_deleting_the_conversation_deletes_its_streams() -> None:
    store = MemoryTurnStreamStore()
    driver = driver_for(build_app(make_agent(StreamingChatClient()), stream_store=store), "assistant")
    run(driver, "t1", "one")
    run(driver, "t2", "two")

    driver.send(("delete", {"changeId": "d1"}))

    assert store.streams == {}
    assert event_streams(store.deleted) == [stream_key("conversation_assistant", "c1", t) for t in ("t1", "t2")]


def test_a_tool_waiting_for_approval_is_streamed_as_the_approval_the_turn_records() -> None:
    store = MemoryTurnStreamStore()
    agent = make_agent(StreamingChatClient(), tools=[cancel_order])
    driver = driver_for(build_app(agent, stream_store=store), "assistant")

    record = run(driver, "t1", 'call cancel_order {"order_id": "A17"}')

    (requested,) = [e.data for e in store.events(STREAM) if e.event == "approval.requested"]
    assert record["approvalRequests"] == [requested]
    assert requested["toolName"] == "cancel_order" and requested["arguments"] == {"order_id": "A17"}
    calls = [e.data for e in store.events(STREAM) if e.event == "tool.call"]
    assert calls == [{"callId": "call-1", "name": "cancel_order", "arguments": {"order_id": "A17"}}]
