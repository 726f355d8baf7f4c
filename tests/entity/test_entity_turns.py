"""The conversation entity driven with the host's JSON batch format, state fed back as a string."""

from __future__ import annotations

import json

from apps import build_app, driver_for, make_agent
from chat_clients import FailingChatClient, ScriptedChatClient


def test_history_survives_a_cold_start_between_every_turn() -> None:
    stored: str | None = None
    clients = []
    for number, text in enumerate(["My name is Ada.", "I like tea.", "What is my name?"], start=1):
        client = ScriptedChatClient()  # a fresh process: new client, agent and app; state only from the string
        clients.append(client)
        driver = driver_for(build_app(make_agent(client)), "assistant", state=stored)
        driver.run_turn(f"t{number}", text)
        stored = driver.state

    last_call = clients[-1].calls[0]
    assert [m.text for m in last_call] == [
        "My name is Ada.",
        "reply 1: My name is Ada.",
        "I like tea.",
        "reply 1: I like tea.",
        "What is my name?",
    ]


def test_persisted_messages_keep_their_ids_and_every_additional_property() -> None:
    def annotated(messages, options):
        from agent_framework import Message

        return Message("assistant", ["noted"], message_id="model-id-7", additional_properties={"_group": {"id": "g1"}})

    driver = driver_for(build_app(make_agent(ScriptedChatClient(annotated))), "assistant")

    driver.run_turn("t1", "hello")

    stored = driver.decoded()["messages"]
    assert stored[0]["id"] == "t1.in" and stored[0]["text"] == "hello"
    assert stored[1]["id"] == "model-id-7"
    assert stored[1]["props"] == {"_group": {"id": "g1"}}


def test_failed_model_call_is_a_failed_turn_and_history_is_unchanged() -> None:
    ok = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant")
    ok.run_turn("t1", "first")
    before = ok.decoded()["messages"]
    failing = driver_for(build_app(make_agent(FailingChatClient())), "assistant", state=ok.state)

    record = failing.run_turn("t2", "second")

    assert record["status"] == "failed"
    assert record["error"]["code"] == "turn_failed"
    assert "RuntimeError" in record["error"]["message"]
    assert "secret-detail-123" not in failing.state
    assert failing.decoded()["messages"] == before
    again = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant", state=failing.state)
    assert again.run_turn("t3", "third")["text"] == "reply 1: third"


def test_redelivered_signal_returns_recorded_turn_without_calling_the_model() -> None:
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client)), "assistant")

    results = driver.send(("run", {"turnId": "t1", "message": "hi"}), ("run", {"turnId": "t1", "message": "hi"}))

    assert len(client.calls) == 1
    assert [m["text"] for m in driver.decoded()["messages"]] == ["hi", "reply 1: hi"]
    assert json.loads(results[1]["result"])["duplicate"] is True


def test_state_of_a_newer_schema_version_is_refused_and_left_unchanged() -> None:
    future = json.dumps({"schemaVersion": 99, "messages": [{"id": "x", "role": "user", "text": "keep me"}]})
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client)), "assistant", state=future)

    (result,) = driver.send(("run", {"turnId": "t1", "message": "hi"}))

    assert result["isError"] is True
    assert "schema version 99" in json.loads(result["result"])
    assert driver.state == future
    assert client.calls == []


def test_corrupt_state_is_refused_and_left_unchanged() -> None:
    corrupt = '{"schemaVersion": 1, "messages": [{"id": "x"'
    driver = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant", state=corrupt)

    (result,) = driver.send(("run", {"turnId": "t1", "message": "hi"}))

    assert result["isError"] is True
    assert "not valid JSON" in json.loads(result["result"])
    assert driver.state == corrupt


def test_the_callers_agent_is_never_mutated() -> None:
    from agent_framework import InMemoryHistoryProvider

    agent = make_agent(
        ScriptedChatClient(), context_providers=[InMemoryHistoryProvider()], default_options={"temperature": 0.1}
    )
    providers_before = list(agent.context_providers)
    options_before = dict(agent.default_options)
    driver = driver_for(build_app(agent), "assistant")

    driver.run_turn("t1", "hi")
    driver.run_turn("t2", "again")

    assert agent.context_providers == providers_before
    assert type(agent.context_providers[0]) is InMemoryHistoryProvider
    assert agent.default_options == options_before
