"""The entity starts a conversation from imported history only when it has no state at all (docs/migrating.md).

Two first turns racing each other both carry the import; a conversation deleted here has a tombstone; neither may
take the published history again."""

from __future__ import annotations

from typing import Any

from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient

IMPORTED = {
    "messages": [
        {"id": "corr-0.q0", "role": "user", "text": "My codename is BLUEHERON.", "at": 1},
        {"id": "corr-0.a0", "role": "assistant", "text": "Noted.", "at": 2},
    ],
    "source": {"entity": "dafx-assistant", "schemaVersion": "1.1.0", "entries": 2, "messages": 2, "skipped": 0},
}


def run(driver: Any, turn_id: str, **operation: Any) -> dict[str, Any]:
    (result,) = driver.send(("run", {"turnId": turn_id, "message": "Hello.", **operation}))
    assert not result["isError"], result
    return driver.decoded()


def test_a_new_conversation_starts_from_the_imported_messages() -> None:
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client)), "assistant")

    state = run(driver, "t1", imported=IMPORTED)

    assert [m["id"] for m in state["messages"]][:2] == ["corr-0.q0", "corr-0.a0"]
    assert [m.text for m in client.calls[0]][-3:] == ["My codename is BLUEHERON.", "Noted.", "Hello."]
    assert state["importedFrom"]["entity"] == "dafx-assistant" and state["importedFrom"]["messages"] == 2


def test_a_second_turn_carrying_the_import_does_not_take_it_again() -> None:
    driver = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant")
    run(driver, "t1", imported=IMPORTED)

    state = run(driver, "t2", imported=IMPORTED)

    assert [m["id"] for m in state["messages"]].count("corr-0.q0") == 1
    assert len(state["messages"]) == 6


def test_a_deleted_conversation_does_not_take_the_import() -> None:
    driver = driver_for(build_app(make_agent(ScriptedChatClient())), "assistant")
    run(driver, "t1")
    driver.send(("delete", {"changeId": "d1"}))

    state = run(driver, "t2", imported=IMPORTED)

    assert "importedFrom" not in state
    assert [m["text"] for m in state["messages"]] == ["Hello.", "reply 2: Hello."]


def test_an_import_over_a_keep_all_budget_is_kept_and_the_turn_refused() -> None:
    # Nothing is dropped to make it fit: keep_all never deletes; the turn says why it cannot run.
    long = [{"id": f"corr-{n}.q0", "role": "user", "text": "x" * 400, "at": n} for n in range(20)]
    app = build_app()
    app.add_agent(make_agent(ScriptedChatClient()), retention_mode="keep_all", max_state_bytes=4096)
    driver = driver_for(app, "assistant")

    state = run(driver, "t1", imported={**IMPORTED, "messages": long})

    assert state["turns"]["t1"]["error"]["code"] == "state_capacity_exceeded"
    assert [m["id"] for m in state["messages"]] == [m["id"] for m in long]
