"""An orchestration turn that carries the expiry activity: both actions go out together, and only the entity's reply
decides the task, whichever completes first (the SDK's own task classes, completed as its executor completes them)."""

from __future__ import annotations

from typing import Any

import azure.durable_functions as df
from azure.durable_functions.models.actions.CallActivityAction import CallActivityAction
from azure.durable_functions.models.actions.CallEntityAction import CallEntityAction
from azure.durable_functions.models.actions.WhenAllAction import WhenAllAction
from azure.durable_functions.models.Task import AtomicTask, TaskState

from agent_host._orchestrations.reply import AgentCall
from agent_host._orchestrations.task import AgentTask

REPLY = {
    "turnId": "t1",
    "status": "completed",
    "at": 1_700_000_000_000,
    "messages": [{"id": "t1.out", "role": "assistant", "text": "Hello, Ada.", "at": 1_700_000_000_000}],
}


def tasks(schema_v1: bool) -> tuple[AtomicTask, AtomicTask, AgentTask]:
    entity_action = CallEntityAction(df.EntityId("conversation_assistant", "c1"), "run", {"turnId": "t1"})
    watch_action = CallActivityAction("expiry_watch", {"entity": "conversation_assistant", "key": "c1"})
    entity: Any = AtomicTask(None, [entity_action] if schema_v1 else entity_action)
    watch: Any = AtomicTask(None, [watch_action] if schema_v1 else watch_action)
    return entity, watch, AgentTask(entity, AgentCall("assistant", "c1", "t1"), watch=watch)


def test_the_call_and_the_activity_are_scheduled_together_under_either_replay_schema() -> None:
    _, _, v2 = tasks(schema_v1=False)
    _, _, v1 = tasks(schema_v1=True)

    assert isinstance(v2.action_repr, WhenAllAction)
    assert [action["actionType"] for action in v2.action_repr.to_json()["compoundActions"]] == [
        7,
        0,
    ]  # entity, activity
    assert isinstance(v1.action_repr, list) and [type(a).__name__ for a in v1.action_repr] == [
        "CallEntityAction",
        "CallActivityAction",
    ]


def test_the_activity_completing_first_leaves_the_turn_waiting_for_its_reply() -> None:
    entity, watch, turn = tasks(schema_v1=False)

    watch.set_value(is_error=False, value="started")
    waiting = turn.state
    entity.set_value(is_error=False, value=REPLY)

    assert waiting is TaskState.RUNNING
    assert turn.state is TaskState.SUCCEEDED and turn.result.text == "Hello, Ada."


def test_a_failed_activity_does_not_fail_the_turn() -> None:
    entity, watch, turn = tasks(schema_v1=True)

    watch.set_value(is_error=True, value=Exception("the durable host could not be reached"))
    entity.set_value(is_error=False, value=REPLY)

    assert turn.state is TaskState.SUCCEEDED and turn.result.text == "Hello, Ada."


def test_the_activity_completing_after_the_reply_changes_nothing() -> None:
    entity, watch, turn = tasks(schema_v1=False)

    entity.set_value(is_error=False, value=REPLY)
    answered = turn.result
    watch.set_value(is_error=False, value="watched")

    assert turn.state is TaskState.SUCCEEDED and turn.result is answered
