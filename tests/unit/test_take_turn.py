"""take_turn, the one way every front end takes a turn: each outcome, and a key's retry, against an in-memory client."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from clocks import ManualClock
from conversations import MemoryConversationClient, completed, failed, unanswered
from streams import HeldListReads, MemoryTurnStreamStore

from agent_host._contract import RUN_OPERATION
from agent_host._conversation.view import ConversationView
from agent_host._conversation_client.in_flight import InFlight
from agent_host._conversation_client.turns import (
    Accepted,
    Answered,
    Failed,
    Gone,
    Pending,
    TurnAsk,
    TurnOutcome,
    take_turn,
)
from agent_host._errors import (
    BusyRuleUnavailableError,
    ConversationBusyError,
    ConversationNotFoundError,
    IdempotencyConflictError,
    TurnExpiredError,
)
from agent_host._streaming.channel import StreamEvent
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host._streaming.store_errors import StreamStoreUnavailableError
from agent_host._streaming.turn_controls import TurnControls


def take(client: MemoryConversationClient, ask: TurnAsk, in_flight: InFlight | None = None) -> TurnOutcome:
    return asyncio.run(take_turn(client, ask, ManualClock(), in_flight))


def waited(message: str = "hi", **fields: Any) -> TurnAsk:
    return TurnAsk("c1", {"message": message}, wait_seconds=1.0, **fields)


def test_a_waited_turn_that_completes_is_answered_with_its_text() -> None:
    client = MemoryConversationClient(completed("Hello, Ada."))

    outcome = take(client, waited())

    assert isinstance(outcome, Answered)
    assert outcome.turn.text == "Hello, Ada."
    assert [(operation, payload["message"]) for _, operation, payload in client.signals] == [(RUN_OPERATION, "hi")]
    assert client.watched == ["c1"]


def test_a_turn_that_fails_says_why() -> None:
    client = MemoryConversationClient(failed("model_error", "The model refused."))

    outcome = take(client, waited())

    assert isinstance(outcome, Failed)
    assert outcome.error == {"code": "model_error", "message": "The model refused."}


def test_a_turn_not_waited_for_is_accepted_once_signalled() -> None:
    client = MemoryConversationClient(unanswered)

    outcome = take(client, TurnAsk("c1", {"message": "hi"}, stream=True))

    assert isinstance(outcome, Accepted)
    assert client.signals[0][2]["turnId"] == outcome.turn_id and client.signals[0][2]["stream"] is True


def test_a_waited_turn_that_does_not_settle_is_pending() -> None:
    client = MemoryConversationClient(unanswered)

    outcome = take(client, waited())

    assert isinstance(outcome, Pending)


def test_a_retry_of_a_key_is_answered_from_its_turn_without_a_second_signal() -> None:
    client = MemoryConversationClient(completed("Once."))
    first = take(client, waited(idempotency_key="k1"))

    retry = take(client, waited(idempotency_key="k1"))

    assert isinstance(first, Answered) and isinstance(retry, Answered)
    assert retry.turn.turn_id == first.turn.turn_id and retry.turn.text == "Once."
    assert len(client.signals) == 1


def test_a_key_reused_for_another_request_is_refused_before_anything_is_signalled() -> None:
    client = MemoryConversationClient(completed("Once."))
    take(client, waited("first", idempotency_key="k1"))

    with pytest.raises(IdempotencyConflictError):
        take(client, waited("second", idempotency_key="k1"))

    assert len(client.signals) == 1


def test_a_key_whose_turn_expired_is_refused_naming_that_turn() -> None:
    client = MemoryConversationClient(completed("Once."))
    first = take(client, waited(idempotency_key="k1"))
    assert isinstance(first, Answered)
    state = client.states["c1"]
    state["expiredTurns"], state["turns"] = [first.turn.turn_id], {}

    with pytest.raises(TurnExpiredError, match=first.turn.turn_id):
        take(client, waited(idempotency_key="k1"))


def test_a_turn_deleted_with_its_conversation_is_gone() -> None:
    def delete_with_turn(operation: dict[str, Any]) -> None:
        client.states["c1"] = {
            "agent": "assistant",
            "deleted": {"at": 2, "existed": True, "turns": [operation["turnId"]]},
        }

    client = MemoryConversationClient(delete_with_turn)

    outcome = take(client, waited())

    assert isinstance(outcome, Gone)
    assert isinstance(outcome.error, ConversationNotFoundError)


def test_a_reject_that_found_the_conversation_idle_is_refused_by_a_turn_listed_ahead_of_its_own(tmp_path: Path) -> None:
    client = MemoryConversationClient(unanswered)
    held = HeldListReads(SqliteStreamStore(tmp_path / "s.sqlite3"), 1)
    in_flight = InFlight(TurnControls(held, "conversation_assistant", "c1"), lambda turn_id, state: True)
    clock = ManualClock()

    async def race() -> tuple[TurnOutcome, BaseException | TurnOutcome]:
        rejecting = asyncio.create_task(
            take_turn(client, TurnAsk("c1", {"message": "if idle"}, if_busy="reject"), clock, in_flight)
        )
        await asyncio.to_thread(held.all_held.wait, 10)  # its read found nothing in flight
        enqueued = await take_turn(client, TurnAsk("c1", {"message": "first"}), clock, in_flight)
        held.release.set()
        return enqueued, (await asyncio.gather(rejecting, return_exceptions=True))[0]

    enqueued, rejected = asyncio.run(race())

    assert isinstance(enqueued, Accepted)
    assert isinstance(rejected, ConversationBusyError) and rejected.fields["busyWith"] == enqueued.turn_id
    assert [payload["message"] for _, _, payload in client.signals] == ["first"]
    assert asyncio.run(in_flight.turns(ConversationView.empty())) == [enqueued.turn_id]  # the refused one withdrew


class CancelsFailingFor(MemoryTurnStreamStore):
    """A store that cannot write the cancel request of one turn (its disk filled just then)."""

    def __init__(self, turn_id: str) -> None:
        super().__init__()
        self.turn_id = turn_id

    async def append(self, stream: str, events: Sequence[StreamEvent]) -> None:
        if stream.endswith(f"/{self.turn_id}.cancel"):
            raise StreamStoreUnavailableError("memory", f"append to stream {stream!r}", "disk full")
        await super().append(stream, events)


def test_an_interrupt_the_store_fails_part_way_through_is_not_taken_and_names_the_turns_it_stopped() -> None:
    client = MemoryConversationClient(unanswered)
    store = CancelsFailingFor("t2")
    controls = TurnControls(store, "conversation_assistant", "c1")
    in_flight = InFlight(controls, lambda turn_id, state: True)
    for queued in ("t1", "t2"):
        asyncio.run(controls.accept(queued))

    with pytest.raises(BusyRuleUnavailableError) as raised:
        take(client, TurnAsk("c1", {"message": "stop them"}, if_busy="interrupt"), in_flight)

    assert raised.value.message == (
        'The turn was not taken: "ifBusy": "interrupt" orders it among the turns in flight of conversation \'c1\', '
        "and the turn stream store (memory) could not append to stream 'conversation_assistant/c1/t2.cancel': disk "
        "full. Nothing was stored for it and the model was not called. Turn 't1' had already been asked to stop, and "
        'stops. Retry shortly, or send "ifBusy": "enqueue", which runs the turn without that record.'
    )
    assert (raised.value.code, raised.value.fields) == ("storage_unavailable", {"conversationId": "c1"})
    assert client.signals == []
    assert asyncio.run(controls.cancel_requested("t1")) == "partial"
    assert asyncio.run(controls.recent_accepted()) == ["t1", "t2"]  # the refused turn withdrew


@pytest.mark.parametrize("if_busy", ["reject", "interrupt", "rollback"])
def test_an_if_busy_rule_without_a_turn_stream_store_is_refused_not_enqueued(if_busy: str) -> None:
    client = MemoryConversationClient(completed("Hello, Ada."))

    with pytest.raises(BusyRuleUnavailableError) as refused:
        take(client, waited(if_busy=if_busy), in_flight=None)

    assert refused.value.code == "storage_unavailable" and refused.value.status == 503
    assert str(refused.value) == (
        f'The turn was not taken: "ifBusy": "{if_busy}" orders it among the turns in flight of conversation \'c1\', '
        "and this app has no turn stream store to keep that order in. Nothing was stored for it and the model was not "
        'called. Give the app one (AGENT_HOST_STREAM_STORE, docs/streaming-stores.md), or send "ifBusy": "enqueue", '
        "which runs the turn after the turns in flight."
    )
    assert refused.value.fields == {"conversationId": "c1"}
    assert client.signals == []


def test_an_enqueued_turn_without_a_turn_stream_store_runs() -> None:
    client = MemoryConversationClient(completed("Hello, Ada."))

    outcome = take(client, waited(if_busy="enqueue"), in_flight=None)

    assert isinstance(outcome, Answered) and outcome.turn.text == "Hello, Ada."
