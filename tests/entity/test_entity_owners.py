"""The entity's side of per-user conversations: a new conversation records the owner its creating operation carries,
and an operation carrying another owner changes nothing (two principals' first turns racing to one new id)."""

from __future__ import annotations

from apps import build_app, driver_for, make_agent
from batches import EntityDriver

from agent_host import OfflineChatClient


def driver() -> EntityDriver:
    return driver_for(build_app(make_agent(OfflineChatClient())), "assistant")


def turn(turn_id: str, owner: str | None) -> tuple[str, dict[str, object]]:
    operation: dict[str, object] = {"turnId": turn_id, "message": f"Turn {turn_id}."}
    if owner is not None:
        operation["owner"] = owner
    return "run", operation


def test_a_first_turn_records_its_owner_and_another_owners_turn_changes_nothing() -> None:
    entity = driver()
    entity.send(turn("t-1", "alice"))
    stored = entity.state

    entity.send(
        turn("t-2", "bob"), ("set_retention", {"changeId": "r1", "retention": {"mode": "keep_all"}, "owner": "bob"})
    )

    assert entity.decoded()["owner"] == "alice"
    assert entity.state == stored
    entity.send(turn("t-3", "alice"))
    assert set(entity.decoded()["turns"]) == {"t-1", "t-3"}


def test_a_retention_change_may_create_the_conversation_and_names_its_owner() -> None:
    entity = driver()
    entity.send(("set_retention", {"changeId": "r1", "retention": {"mode": "keep_all"}, "owner": "carol"}))

    assert entity.decoded()["owner"] == "carol"


def test_a_tombstone_keeps_its_owner_and_the_next_conversation_takes_its_creators() -> None:
    entity = driver()
    entity.send(turn("t-1", "alice"), ("delete", {"changeId": "d1"}))
    tombstone = entity.decoded()
    entity.send(turn("t-2", "alice"))

    assert tombstone["owner"] == "alice" and "deleted" in tombstone
    assert entity.decoded()["owner"] == "alice" and set(entity.decoded()["turns"]) == {"t-2"}


def test_a_conversation_created_without_an_owner_is_nobodys_to_claim() -> None:
    entity = driver()
    entity.send(turn("t-1", None))
    entity.send(turn("t-2", "alice"))

    assert "owner" not in entity.decoded()
    assert set(entity.decoded()["turns"]) == {"t-1"}
