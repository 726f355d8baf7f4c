"""The entity's side of cancelling: a turn asked to stop before it starts never runs, whichever arrives first, the
cancel operation or the turn; the turn controls it reads live in the turn stream store."""

from __future__ import annotations

import asyncio
import json

from apps import build_app, driver_for, make_agent
from chat_clients import ScriptedChatClient
from streams import MemoryTurnStreamStore

from agent_host._streaming.turn_controls import TurnControls

TURN = "1a22fd5d844fb96572e"


def test_a_cancel_that_overtook_its_turn_records_it_cancelled_and_the_turn_never_runs() -> None:
    client = ScriptedChatClient()
    driver = driver_for(build_app(make_agent(client), stream_store=MemoryTurnStreamStore()), "assistant")

    (cancelled,) = driver.send(("cancel", {"turnId": TURN, "keep": "nothing"}))
    (ran,) = driver.send(("run", {"turnId": TURN, "message": "hello"}))

    assert json.loads(cancelled["result"]) == {"turnId": TURN, "status": "cancelled"}
    assert json.loads(ran["result"])["duplicate"] is True
    assert client.calls == []
    record = driver.decoded()["turns"][TURN]
    assert (record["status"], record["cancel"]) == ("cancelled", {"keep": "nothing", "ran": False})
    assert driver.decoded()["messages"] == []


def test_a_turn_asked_to_stop_while_queued_never_runs_and_its_cancel_operation_changes_nothing() -> None:
    client = ScriptedChatClient()
    store = MemoryTurnStreamStore()
    driver = driver_for(build_app(make_agent(client), stream_store=store), "assistant")
    asyncio.run(TurnControls(store, "conversation_assistant", "c1").request_cancel(TURN, "partial"))

    driver.send(("run", {"turnId": TURN, "message": "hello"}))
    before = driver.state
    (cancelled,) = driver.send(("cancel", {"turnId": TURN, "keep": "partial"}))

    assert client.calls == []
    assert driver.decoded()["turns"][TURN]["cancel"] == {"keep": "partial", "ran": False}
    assert json.loads(cancelled["result"]) == {"turnId": TURN, "status": "cancelled"}
    assert driver.state == before


def test_a_finished_turns_cancel_operation_answers_its_status_and_changes_nothing() -> None:
    driver = driver_for(build_app(make_agent(ScriptedChatClient()), stream_store=MemoryTurnStreamStore()), "assistant")
    driver.send(("run", {"turnId": TURN, "message": "hello"}))
    before = driver.state

    (cancelled,) = driver.send(("cancel", {"turnId": TURN}))

    assert json.loads(cancelled["result"]) == {"turnId": TURN, "status": "completed"}
    assert driver.state == before
