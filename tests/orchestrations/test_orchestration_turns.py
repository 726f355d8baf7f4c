"""Agent turns taken from orchestrations, end to end through the SDK's orchestrator handle and the real entity.

`HistoryDriver` plays the host: the orchestrator's entity calls run on the app's conversation entity function in
the host's batch format, and the results come back as the host records them. Assertions are on what the model
received, what the entity committed, and what the orchestration returned.
"""

from __future__ import annotations

import json
from typing import Any

from agent_framework import Message
from batches import EntityDriver
from chat_clients import ScriptedChatClient
from histories import HistoryDriver, functions_of
from orchestration_apps import build_orchestration_app, heard_script
from orchestration_scenarios import CHAIN_ANSWERS, fan_out_answers

from agent_host import HostSettings
from agent_host._contract import MAX_REPLY_BYTES


def playing(orchestrator: str, orchestration_input: Any = None, **clients: Any) -> HistoryDriver:
    settings = clients.pop("settings", None)
    app = build_orchestration_app(**clients, settings=settings)
    return HistoryDriver(functions_of(app), orchestrator, orchestration_input=orchestration_input)


def user_texts(call: list[Message]) -> list[str]:
    return [message.text for message in call if message.role == "user"]


def test_the_second_turn_remembers_the_draft_and_both_turns_are_recorded_under_the_orchestrations_turn_ids() -> None:
    writer = ScriptedChatClient(heard_script)
    driver = playing("chain", writer=writer)

    done = driver.run()

    conversation = done["output"]["conversation"]
    state = driver.entity_state("conversation_writer", conversation)
    turn_ids = [call.input["turnId"] for call in driver.calls]
    assert {name: done["output"][name] for name in CHAIN_ANSWERS} == CHAIN_ANSWERS
    assert [message.text for message in writer.calls[1]] == [
        "Write a haiku about rain.",
        "heard: Write a haiku about rain.",
        "Make it sadder.",
    ]
    assert list(state["turns"]) == turn_ids
    assert [record["status"] for record in state["turns"].values()] == ["completed", "completed"]
    assert [message["text"] for message in state["messages"]] == [
        "Write a haiku about rain.",
        "heard: Write a haiku about rain.",
        "Make it sadder.",
        "heard: Write a haiku about rain. | Make it sadder.",
    ]


def test_a_redelivered_call_returns_the_recorded_answer_without_calling_the_model_again() -> None:
    writer = ScriptedChatClient(heard_script)
    driver = playing("chain", writer=writer)
    started = driver.event(0, Name="chain", Version="", Input="null")
    driver.episode([started])
    (call,) = driver.calls

    first = json.loads(json.loads(driver.answer(call)["Input"])["result"])
    again = json.loads(json.loads(driver.answer(call)["Input"])["result"])

    assert len(writer.calls) == 1
    assert again["duplicate"] is True
    assert again["messages"] == first["messages"]
    assert [message["text"] for message in again["messages"]] == ["heard: Write a haiku about rain."]


def test_replaying_a_finished_orchestration_runs_no_turn_and_returns_the_same_output() -> None:
    writer = ScriptedChatClient(heard_script)
    driver = playing("chain", writer=writer)
    done = driver.run()
    states = dict(driver.entity_states)

    replayed = driver.replay()

    assert replayed["output"] == done["output"]
    assert len(writer.calls) == 2
    assert driver.entity_states == states


def test_a_person_and_an_orchestration_take_turns_in_one_conversation() -> None:
    writer = ScriptedChatClient(heard_script)
    driver = playing("join", {"conversation": "support-42", "message": "What did I say?"}, writer=writer)
    person = EntityDriver(driver.functions["conversation_writer"], "conversation_writer", "support-42")
    person.run_turn("0000000000aperson01", "My order number is 1234.")
    driver.entity_states[("conversation_writer", "support-42")] = person.state

    done = driver.run()
    person.state = driver.entity_states[("conversation_writer", "support-42")]
    later = person.run_turn("0000000000bperson02", "And then?")

    assert done["output"] == "heard: My order number is 1234. | What did I say?"
    assert later["text"] == "heard: My order number is 1234. | What did I say? | And then?"


def test_fan_out_over_agents_and_sessions_returns_each_answer_in_task_order_whatever_order_they_arrive_in() -> None:
    driver = playing("fan_out", ["rain", "snow", "fog"])

    done = driver.run(order=lambda calls: list(reversed(calls)))

    assert done["output"] == fan_out_answers(["rain", "snow", "fog"])
    assert len({(call.entity_name, call.key) for call in driver.calls}) == 4


def test_a_failed_turn_fails_the_task_with_the_turns_code_and_message_and_the_orchestration_can_catch_it() -> None:
    driver = playing("catch_failure")

    done = driver.run()

    output = done["output"]
    state = driver.entity_state("conversation_broken", output["conversation"])
    assert output["code"] == "turn_failed"
    assert output["message"] == state["turns"][output["turn"]]["error"]["message"]
    assert output["message"].startswith("The agent run failed (RuntimeError).")
    assert "secret-detail-123" not in output["message"]


def test_an_uncaught_failed_turn_fails_the_orchestration_naming_the_agent_turn_and_code() -> None:
    driver = playing("uncaught_failure")

    done = driver.run()

    (call,) = driver.calls
    assert "isDone" not in done or not done["isDone"]
    assert (
        f"Agent 'broken' turn '{call.input['turnId']}' in conversation '{call.key}' failed (turn_failed)"
        in (done["error"])
    )


def test_an_entity_operation_that_fails_fails_the_task_with_entity_call_failed() -> None:
    driver = playing("join", {"conversation": "damaged", "message": "Hello?"})
    driver.entity_states[("conversation_writer", "damaged")] = '{"schemaVersion": 99}'

    done = driver.run()

    assert "failed (entity_call_failed)" in done["error"]
    assert "schema version 99" in done["error"]


def test_structured_output_gives_an_instance_of_the_model() -> None:
    editor = ScriptedChatClient(heard_script)
    driver = playing("review", "Please review: ship it.", editor=editor)

    done = driver.run()

    assert done["output"] == {"type": "Verdict", "approved": True, "reason": "read: Please review: ship it."}


def test_structured_output_reaches_the_model_as_a_json_schema_named_for_the_model() -> None:
    seen: list[Any] = []

    def recording(messages: list[Message], options: Any) -> Message:
        seen.append(options.get("response_format"))
        return heard_script(messages, options)

    driver = playing("review", "Please review: ship it.", editor=ScriptedChatClient(recording))

    driver.run()

    (response_format,) = seen
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Verdict"
    assert response_format["json_schema"]["schema"]["required"] == ["approved", "reason"]


def test_an_answer_that_does_not_validate_fails_the_task_naming_the_model() -> None:
    driver = playing("review_or_report", "This answer will be malformed.")

    done = driver.run()

    output = done["output"]
    assert (output["error"], output["code"]) == ("StructuredOutputError", "invalid_structured_output")
    assert "the answer is not a valid Verdict" in output["message"]
    assert "approved: Input should be a valid boolean" in output["message"]
    assert "reason: Field required" in output["message"]


def test_an_answer_over_the_reply_limit_fails_the_task_but_the_turn_is_recorded() -> None:
    long_answer = "rain " * (MAX_REPLY_BYTES // 4)
    writer = ScriptedChatClient(lambda messages, options: Message("assistant", [long_answer]))
    driver = playing("join", {"conversation": "long", "message": "Write a lot."}, writer=writer)

    done = driver.run()

    (call,) = driver.calls
    record = driver.entity_state("conversation_writer", "long")["turns"][call.input["turnId"]]
    assert "failed (reply_too_large)" in done["error"]
    assert f"over the {MAX_REPLY_BYTES} bytes" in done["error"]
    assert f"/api/agents/writer/conversations/long/turns/{call.input['turnId']}" in done["error"]
    assert record["status"] == "completed"


def test_a_call_for_a_turn_whose_record_expired_is_not_run_again() -> None:
    writer = ScriptedChatClient(heard_script)
    driver = playing("chain", writer=writer, settings=HostSettings(max_turn_records=1, conversation_ttl_seconds=0))
    driver.run()
    first, _ = driver.calls

    late = json.loads(json.loads(driver.answer(first)["Input"])["result"])

    assert late == {"turnId": first.input["turnId"], "status": "expired", "duplicate": True}
    assert len(writer.calls) == 2
