"""What an orchestrator using `app.get_agent` asks the host to do: the SDK's real handle on hand-built histories.

Each test asserts the CallEntity actions: the entity id, the operation and its input, and turn ids that derive from
the orchestration, the same on every replay and different for every call.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agent_framework import AgentSession
from azure.durable_functions import DurableOrchestrationContext
from histories import CALL_ENTITY, WHEN_ALL, HistoryDriver, flat_actions, functions_of
from orchestration_apps import Verdict, build_orchestration_app

from agent_host._contract import TURN_ID_PATTERN

TURN_ID = re.compile(r"[0-9a-f]{11}o[0-9a-f]{20}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def driver(orchestrator: str, orchestration_input: Any = None, **kwargs: Any) -> HistoryDriver:
    return HistoryDriver(
        functions_of(build_orchestration_app()), orchestrator, orchestration_input=orchestration_input, **kwargs
    )


def first_episode(
    orchestrator: str, orchestration_input: Any = None, execution_id: str | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    """The actions the orchestrator returns when it first runs (in the execution `execution_id`, if given)."""
    playing = driver(orchestrator, orchestration_input, **kwargs)
    instance = {"OrchestrationInstance": {"InstanceId": playing.instance_id, "ExecutionId": execution_id}}
    started = playing.event(
        0, Name=orchestrator, Version="", Input=json.dumps(orchestration_input), **(instance if execution_id else {})
    )
    return flat_actions(playing.episode([started]))


def test_first_run_calls_the_run_operation_of_a_new_writer_conversation_with_a_turn_id_from_the_orchestration() -> None:
    (action,) = first_episode("chain")

    _, entity, key = action["instanceId"].split("@")
    sent = json.loads(action["input"])
    assert (action["actionType"], entity, action["operation"]) == (CALL_ENTITY, "conversation_writer", "run")
    assert UUID.fullmatch(key)
    assert set(sent) == {"turnId", "message", "reply"}
    assert (sent["message"], sent["reply"]) == ("Write a haiku about rain.", True)
    assert TURN_ID.fullmatch(sent["turnId"]) and TURN_ID_PATTERN.fullmatch(sent["turnId"])
    # The turn id starts with the orchestration's own time (2026-03-01T12:00:00Z), as every turn id starts.
    assert int(sent["turnId"][:11], 16) == 1772366400000


def test_every_replay_issues_the_same_calls_with_the_same_turn_ids() -> None:
    playing = driver("chain")
    done = playing.run()

    replayed = playing.replay()

    assert done["isDone"] and replayed["isDone"]
    assert flat_actions(replayed) == flat_actions(done)
    assert replayed["output"] == done["output"]
    assert len(playing.calls) == 2


def test_the_second_turn_goes_to_the_same_conversation_with_its_own_turn_id() -> None:
    playing = driver("chain")

    done = playing.run()

    first, second = playing.calls
    assert first.key == second.key == done["output"]["conversation"]
    assert first.input["turnId"] != second.input["turnId"]
    assert [call.input["message"] for call in playing.calls] == ["Write a haiku about rain.", "Make it sadder."]


def test_another_orchestration_instance_gets_its_own_conversation_and_turn_ids() -> None:
    (one,) = first_episode("chain", instance_id="orchestration-1")
    (two,) = first_episode("chain", instance_id="orchestration-2")

    assert one["instanceId"] != two["instanceId"]
    assert json.loads(one["input"])["turnId"] != json.loads(two["input"])["turnId"]


def test_an_execution_continued_as_new_at_the_same_time_gets_other_turn_ids() -> None:
    # Same instance, same time, same input: only the execution id tells a continue_as_new execution from the last.
    request = {"conversation": "c1", "message": "Again."}
    (first,) = first_episode("join", request, execution_id="execution-1")
    (again,) = first_episode("join", request, execution_id="execution-1")
    (second,) = first_episode("join", request, execution_id="execution-2")

    assert json.loads(first["input"])["turnId"] == json.loads(again["input"])["turnId"]
    assert json.loads(first["input"])["turnId"] != json.loads(second["input"])["turnId"]


def test_create_session_with_an_id_joins_that_conversation() -> None:
    (action,) = first_episode("join", {"conversation": "support-42", "message": "Where were we?"})

    assert action["instanceId"] == "@conversation_writer@support-42"
    assert json.loads(action["input"])["message"] == "Where were we?"


def test_structured_output_sends_the_models_json_schema_by_name_not_the_class() -> None:
    (action,) = first_episode("review", "Please review: ship it.")

    options = json.loads(action["input"])["options"]
    assert options == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Verdict", "schema": Verdict.model_json_schema()},
        }
    }


def test_fan_out_schedules_one_when_all_with_a_call_per_session_and_agent() -> None:
    playing = driver("fan_out", ["rain", "snow", "fog"])
    started = playing.event(0, Name="fan_out", Version="", Input=json.dumps(["rain", "snow", "fog"]))

    state = playing.episode([started])

    (when_all,) = state["actions"][0]
    targets = [action["instanceId"].split("@")[1:] for action in when_all["compoundActions"]]
    turn_ids = [json.loads(action["input"])["turnId"] for action in when_all["compoundActions"]]
    assert when_all["actionType"] == WHEN_ALL
    assert [entity for entity, _ in targets] == ["conversation_writer"] * 3 + ["conversation_editor"]
    assert len({key for _, key in targets}) == 4
    assert len(set(turn_ids)) == 4


# --- Misuse fails at the call, with a message that says what to do ---------------------------------------------------


def orchestration_context() -> DurableOrchestrationContext:
    """A real orchestration context at the start of an orchestration."""
    stamp = "2026-03-01T12:00:00.000000Z"
    history = [
        {"EventType": 12, "EventId": -1, "IsPlayed": False, "Timestamp": stamp},
        {"EventType": 0, "EventId": -1, "IsPlayed": False, "Timestamp": stamp, "Name": "o", "Version": ""},
    ]
    return DurableOrchestrationContext.from_json(
        json.dumps(
            {
                "history": history,
                "instanceId": "o-1",
                "isReplaying": False,
                "parentInstanceId": None,
                "upperSchemaVersion": 1,
                "upperSchemaVersionNew": 2,
            }
        )
    )


@pytest.fixture(scope="module")
def app() -> Any:
    return build_orchestration_app()


def test_an_unknown_agent_name_lists_the_registered_ones(app: Any) -> None:
    with pytest.raises(
        ValueError, match=r"Agent 'writter' is not registered with this app\. Registered agents: broken, editor, writer"
    ):
        app.get_agent(orchestration_context(), "writter")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda w, e: w.run("Hi", stream=True), ValueError, "without stream=True"),
        (lambda w, e: w.run(""), ValueError, "pass a non-empty string"),
        (lambda w, e: w.run("Hi", session=e.create_session()), ValueError, "belongs to agent 'editor', not 'writer'"),
        (lambda w, e: w.run("Hi", session=AgentSession()), ValueError, r"from writer\.create_session\(\)"),
        (lambda w, e: w.run("Hi", options={"store": True}), ValueError, "who keeps the conversation's history"),
        (lambda w, e: w.run("Hi", options={"wait_for_response": False}), ValueError, "not supported"),
        (lambda w, e: w.run("Hi", options={"seed": object()}), TypeError, "'seed' .*travel as JSON"),
        (lambda w, e: w.run("Hi", options={"response_format": int}), TypeError, "pydantic model class"),
        (lambda w, e: w.create_session(session_id="../etc"), ValueError, "Conversation id '../etc' is invalid"),
        (lambda w, e: w.get_session("c1", session_id="c2"), ValueError, "names two conversations"),
    ],
    ids=[
        "stream",
        "empty",
        "other-agents-session",
        "foreign-session",
        "store",
        "fire-and-forget",
        "not-json",
        "response-format",
        "bad-session-id",
        "two-ids",
    ],
)
def test_misuse_fails_at_the_call_with_what_to_do(app: Any, call: Any, error: type[Exception], message: str) -> None:
    context = orchestration_context()
    writer, editor = app.get_agent(context, "writer"), app.get_agent(context, "editor")

    with pytest.raises(error, match=message):
        call(writer, editor)


def test_enable_tool_calls_false_asks_the_entity_for_a_turn_without_tools(app: Any) -> None:
    writer = app.get_agent(orchestration_context(), "writer")

    task = writer.run("Hi", options={"enable_tool_calls": False, "temperature": 0.2})

    sent = json.loads(task.action_repr.to_json()["input"])
    assert (sent["options"], sent["enableToolCalls"]) == ({"temperature": 0.2}, False)


def test_get_session_joins_the_conversation_it_names(app: Any) -> None:
    writer = app.get_agent(orchestration_context(), "writer")

    session = writer.get_session("support-7")

    assert (session.conversation_id, session.session_id, session.agent_name) == ("support-7", "support-7", "writer")
