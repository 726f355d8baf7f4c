"""The entity's `delete` operation on the host's JSON batches: a delete runs once per change id, and a conversation
started after a tombstone inherits none of the old conversation's acknowledged changes (failure 19)."""

from __future__ import annotations

import json

from apps import build_app, driver_for, make_agent
from batches import EntityDriver
from chat_clients import ScriptedChatClient

KEEP_ALL = {"mode": "keep_all", "maxStateBytes": 65536}


def conversation(client: ScriptedChatClient | None = None) -> EntityDriver:
    return driver_for(build_app(make_agent(client or ScriptedChatClient())), "assistant")


def test_a_conversation_started_after_a_delete_inherits_no_applied_change_ids() -> None:
    driver = conversation()
    driver.run_turn("t1", "My name is Ada.")
    driver.send(("set_retention", {"changeId": "r1", "retention": KEEP_ALL}))

    driver.send(("delete", {"changeId": "d1"}), ("run", {"turnId": "t2", "message": "fresh start"}))
    state = driver.decoded()

    assert "deleted" not in state and sorted(state["turns"]) == ["t2"]
    assert state["appliedChanges"] == []  # neither the old retention change nor the delete
    assert state["appliedDeletes"] == ["d1"]  # kept so that d1 never runs on this conversation


def test_a_redelivered_delete_never_deletes_the_conversation_started_after_it() -> None:
    driver = conversation()
    driver.run_turn("t1", "My name is Ada.")

    results = driver.send(
        ("delete", {"changeId": "d1"}),
        ("run", {"turnId": "t2", "message": "fresh start"}),
        ("delete", {"changeId": "d1"}),
    )
    state = driver.decoded()

    assert [result["isError"] for result in results] == [False, False, False]
    assert json.loads(results[2]["result"]) == {"deleted": True}
    assert "deleted" not in state and sorted(state["turns"]) == ["t2"]
    assert [message["text"] for message in state["messages"]] == ["fresh start", "reply 2: fresh start"]


def test_delete_ids_outlive_the_conversations_they_deleted() -> None:
    driver = conversation()
    driver.run_turn("t1", "first")
    driver.send(("delete", {"changeId": "d1"}))
    driver.run_turn("t2", "second")
    driver.send(("delete", {"changeId": "d2"}))
    driver.run_turn("t3", "third")

    driver.send(("delete", {"changeId": "d1"}), ("delete", {"changeId": "d2"}))
    kept = driver.decoded()
    driver.send(("delete", {"changeId": "d3"}))
    tombstone = driver.decoded()

    assert sorted(kept["turns"]) == ["t3"] and kept["appliedDeletes"] == ["d1", "d2"]
    assert tombstone["deleted"]["turns"] == ["t3"] and tombstone["appliedDeletes"] == ["d1", "d2", "d3"]


def test_a_delete_a_conversation_inherited_from_state_before_applied_deletes_is_not_run_again() -> None:
    # Before `appliedDeletes`, a conversation started after a tombstone inherited its ids in `appliedChanges`.
    driver = conversation()
    driver.run_turn("t2", "fresh start")
    driver.state = json.dumps({**driver.decoded(), "appliedChanges": ["d1"]})

    driver.send(("delete", {"changeId": "d1"}))

    assert sorted(driver.decoded()["turns"]) == ["t2"]
