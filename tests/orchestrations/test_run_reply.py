"""The entity's `run` operation asked for its reply (`reply: true`): the answer in the result, bounded; run options.

Host batches from `tests/batches.py` against the real entity function, as the host would send them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_framework import Message
from apps import build_app, driver_for, make_agent
from batches import EntityDriver
from chat_clients import ScriptedChatClient

from agent_host._contract import MAX_REPLY_BYTES
from agent_host._conversation.replies import run_result


def conversation(client: ScriptedChatClient) -> EntityDriver:
    return driver_for(build_app(make_agent(client)), "assistant")


def test_a_reply_carries_the_answers_stored_messages_and_usage() -> None:
    driver = conversation(ScriptedChatClient())

    (result,) = driver.send(("run", {"turnId": "t1", "message": "Hello", "reply": True}))

    body = json.loads(result["result"])
    stored = driver.decoded()
    assert not result["isError"]
    assert (body["turnId"], body["status"]) == ("t1", "completed")
    assert body["messages"] == [stored["messages"][1]]
    assert body["messages"][0]["text"] == "reply 1: Hello"
    assert body["usage"] == stored["turns"]["t1"]["usage"]
    assert body["at"] == stored["turns"]["t1"]["at"]


def test_without_reply_the_result_only_names_the_turn_and_its_status() -> None:
    driver = conversation(ScriptedChatClient())

    (result,) = driver.send(("run", {"turnId": "t1", "message": "Hello"}))

    assert result["result"] == '{"turnId": "t1", "status": "completed"}'


def test_a_failed_turns_reply_carries_its_error_record() -> None:
    def failing(messages: list[Message], options: Any) -> Message:
        raise RuntimeError("model down")

    driver = conversation(ScriptedChatClient(failing))

    (result,) = driver.send(("run", {"turnId": "t1", "message": "Hello", "reply": True}))

    body = json.loads(result["result"])
    assert body["status"] == "failed"
    assert body["error"] == driver.decoded()["turns"]["t1"]["error"]
    assert body["error"]["code"] == "turn_failed"
    assert "messages" not in body


def test_a_reply_over_the_limit_leaves_the_answer_out_and_says_how_large_it_was() -> None:
    driver = conversation(ScriptedChatClient())
    driver.send(("run", {"turnId": "t1", "message": "x" * 500}))
    state = driver.decoded()

    bounded = run_result(state, "t1", reply=True, max_bytes=300)
    whole = run_result(state, "t1", reply=True)

    assert bounded == {
        "turnId": "t1",
        "status": "completed",
        "at": state["turns"]["t1"]["at"],
        "replyBytes": bounded["replyBytes"],
    }
    assert 300 < bounded["replyBytes"] < MAX_REPLY_BYTES
    assert whole["messages"][0]["text"] == "reply 1: " + "x" * 500


def test_run_options_reach_the_model() -> None:
    seen: list[dict[str, Any]] = []

    def recording(messages: list[Message], options: Any) -> Message:
        seen.append(dict(options))
        return Message("assistant", ['{"ok": true}'])

    driver = conversation(ScriptedChatClient(recording))
    schema = {"type": "json_schema", "json_schema": {"name": "Ok", "schema": {"type": "object"}}}

    driver.send(("run", {"turnId": "t1", "message": "Hi", "options": {"response_format": schema, "temperature": 0.1}}))

    assert seen[0]["response_format"] == schema
    assert seen[0]["temperature"] == 0.1


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"store": True}, "run options store are decided by the host"),
        ({"conversation_id": "x"}, "run options conversation_id are decided by the host"),
        ({"response_format": "Verdict"}, "response_format must be a JSON schema object"),
    ],
)
def test_run_options_the_host_decides_or_that_cannot_cross_are_refused(options: dict[str, Any], problem: str) -> None:
    client = ScriptedChatClient()
    driver = conversation(client)

    (result,) = driver.send(("run", {"turnId": "t1", "message": "Hi", "options": options}))

    assert result["isError"]
    assert problem in result["result"]
    assert client.calls == []
    assert driver.state is None
