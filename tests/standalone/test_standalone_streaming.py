"""Streamed turns on the standalone worker: the entity writes a turn's events to the worker's stream store (SQLite,
as locally) while the model runs, and both readers follow them live: the HTTP API (`asgi_app`, on the worker's store
by default) as SSE with Last-Event-ID resume, and `AgentClient`'s async iterators. The same store lets the HTTP API
cancel a running turn and refuse a turn while one is in flight (`ifBusy`), one AgentClient took included."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import ChatResponse, ChatResponseUpdate, Content, Message, ResponseStream, tool
from apps import make_agent
from chat_clients import FailingChatClient, GatedChatClient, ScriptedChatClient
from streams import Sse, open_stream, parse_sse
from worker_hosting import RunningWorkerHost

from agent_host import StreamEvent, TurnNotFoundError
from agent_host._streaming.channel import stream_key
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host.worker import AgentClient

from .workers import agent_client, running_worker

PIECES = ("Hello", " there,", " world.")
ANSWER = "".join(PIECES)
GATE_SECONDS = 30.0
BASE = "/api/agents/assistant/conversations"


class HeldStreamChatClient(ScriptedChatClient):
    """A model that streams its answer piece by piece, each piece after the first held until the test opens its gate
    (`gates[n]` lets piece n + 1 out)."""

    def __init__(self) -> None:
        super().__init__()
        self.gates = [threading.Event() for _ in PIECES[1:]]

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any):
        self.calls.append(list(messages))
        if not stream:
            return ChatResponse(messages=[Message("assistant", [ANSWER])])

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            for number, piece in enumerate(PIECES):
                if number:  # off the agent loop, so the stream writer flushes what came so far
                    await asyncio.to_thread(self.gates[number - 1].wait, GATE_SECONDS)
                yield ChatResponseUpdate(role="assistant", contents=[Content.from_text(piece)])

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStreamStore]:
    sqlite = SqliteStreamStore(tmp_path / "streams.sqlite3")
    yield sqlite
    sqlite.close()


def deltas(events: Sequence[Sse | StreamEvent]) -> list[str]:
    return [str(event.data["text"]) for event in events if event.event == "message.delta"]


def test_the_http_api_streams_live_deltas_from_the_workers_store_and_resumes(store: SqliteStreamStore) -> None:
    model = HeldStreamChatClient()
    running = RunningWorkerHost(lambda: [make_agent(model)], stream_store=store)
    try:
        stream = open_stream(running.base_url, "POST", f"{BASE}/c1/turns", {"message": "hi"})
        events = stream.events()
        received: list[Sse] = []
        held: list[bool] = []
        for gate in model.gates:  # each delta arrives while the model holds the next piece
            while len(deltas(received)) < len(held) + 1:
                received.append(next(events))
            held.append(not gate.is_set() and received[-1].event == "message.delta")
            gate.set()
        received += list(events)
        stream.close()
        turn_id = stream.headers["location"].rsplit("/", 1)[1]
        resumed = running.request(
            "GET", f"{BASE}/c1/turns/{turn_id}/stream", headers={"Accept": "text/event-stream", "Last-Event-ID": "2"}
        )
    finally:
        running.stop()

    assert stream.status == 200
    assert held == [True, True]
    assert received[0].event == "turn.started"
    assert deltas(received) == list(PIECES)  # three deltas, two of them sent before the answer was whole
    assert "".join(deltas(received)) == ANSWER
    assert received[-1].event == "turn.completed"
    assert received[-1].data["text"] == ANSWER and received[-1].data["turnId"] == turn_id
    assert [event.id for event in received] == list(range(1, len(received) + 1))
    assert [(e.id, e.event, e.data) for e in parse_sse(resumed.body)] == [(e.id, e.event, e.data) for e in received[2:]]


def test_agent_client_streams_a_turn_live_and_follows_it_again_after_an_event(
    hub: str, store: SqliteStreamStore
) -> None:
    model = HeldStreamChatClient()

    async def follow(client: AgentClient) -> tuple[list[StreamEvent], list[bool], list[StreamEvent]]:
        conversation = client.conversation("assistant", "c1")
        received: list[StreamEvent] = []
        held: list[bool] = []
        async for event in conversation.stream("hi"):
            received.append(event)
            if event.event == "message.delta" and len(held) < len(model.gates):
                gate = model.gates[len(held)]
                held.append(not gate.is_set())
                gate.set()
        turn_id = str(received[-1].data["turnId"])
        again = [event async for event in conversation.events(turn_id, after=2)]
        return received, held, again

    with running_worker(hub, [make_agent(model)], stream_store=store), agent_client(hub, stream_store=store) as client:
        received, held, again = asyncio.run(follow(client))
        turn_id = str(received[-1].data["turnId"])
        body = client.conversation("assistant", "c1").turn(turn_id)
    written = asyncio.run(store.read(stream_key("conversation_assistant", "c1", turn_id)))

    assert held == [True, True]
    assert received[0].event == "turn.started"
    assert deltas(received) == list(PIECES)
    assert received[-1].event == "turn.completed" and received[-1].data == body
    assert body["text"] == ANSWER
    assert again == received[2:]
    # Everything but the last event is what the entity wrote; the last is the body, read from the receipt.
    assert received[:-1] == written


def test_agent_client_streams_a_failed_turn_to_its_turn_failed_event_and_refuses_an_unknown_turn(
    hub: str, store: SqliteStreamStore
) -> None:
    async def follow(client: AgentClient) -> list[StreamEvent]:
        return [event async for event in client.conversation("assistant", "c1").stream("hi")]

    async def unknown(client: AgentClient) -> list[StreamEvent]:
        return [event async for event in client.conversation("assistant", "c2").events("0000000000a1234abcd")]

    with (
        running_worker(hub, [make_agent(FailingChatClient())], stream_store=store),
        agent_client(hub, stream_store=store) as client,
    ):
        received = asyncio.run(follow(client))
        with pytest.raises(TurnNotFoundError) as refused:
            asyncio.run(unknown(client))

    assert [event.event for event in received] == ["turn.started", "turn.failed"]
    assert received[-1].data["status"] == "failed"
    assert received[-1].data["error"] == {
        "code": "turn_failed",
        "message": "The agent run failed (RuntimeError). The conversation's earlier history is unchanged; send the "
        "next turn to continue.",
    }
    assert refused.value.status == 404 and refused.value.code == "turn_not_found"


booked: list[str] = []


@tool
def book_flight(city: str) -> str:
    """Book a flight (a side effect the tests count)."""
    booked.append(city)
    return f"Booked {city}."


@pytest.fixture
def gated(store: SqliteStreamStore) -> Iterator[tuple[RunningWorkerHost, GatedChatClient]]:
    """The worker's HTTP API with a stream store, serving an agent on a gated model (open the gate to let it answer)."""
    booked.clear()
    model = GatedChatClient()
    running = RunningWorkerHost(lambda: [make_agent(model, tools=[book_flight])], stream_store=store)
    yield running, model
    model.gate.set()
    running.stop()


def wait_until(done: Callable[[], bool], timeout: float = GATE_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_running_turn_is_cancelled_through_the_workers_store(gated) -> None:
    running, model = gated
    posted = running.request(
        "POST", f"{BASE}/c1/turns", {"message": 'call book_flight {"city": "Oslo"}', "wait": False}
    )
    turn_id = posted.json()["turnId"]
    wait_until(lambda: len(model.calls) == 1)  # the turn runs: its model call waits at the gate

    stopping = running.request("POST", f"{BASE}/c1/turns/{turn_id}/cancel", {"keep": "nothing", "wait": False})
    model.gate.set()
    events = parse_sse(running.request("GET", f"{BASE}/c1/turns/{turn_id}/stream").body)  # ends with the turn
    read = running.request("GET", f"{BASE}/c1/turns/{turn_id}").json()

    assert stopping.status == 202 and stopping.json()["status"] == "cancelling"
    assert events[-1].event == "turn.cancelled"
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "nothing", "ran": True}
    assert booked == []  # stopped before the tool its model asked for


def test_if_busy_reject_refuses_a_turn_while_one_is_in_flight(gated) -> None:
    running, model = gated
    first = running.request("POST", f"{BASE}/c1/turns", {"message": "first", "wait": False}).json()["turnId"]

    refused = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "ifBusy": "reject"})
    model.gate.set()
    parse_sse(running.request("GET", f"{BASE}/c1/turns/{first}/stream").body)  # the first turn has ended
    later = running.request("POST", f"{BASE}/c1/turns", {"message": "third", "ifBusy": "reject"})

    assert refused.status == 409
    assert refused.json()["error"]["code"] == "conversation_busy" and refused.json()["busyWith"] == first
    assert later.status == 200 and later.json()["text"] == "reply 2: third"


def test_a_turn_agent_client_takes_is_in_flight_for_the_http_apis_if_busy(gated, store: SqliteStreamStore) -> None:
    running, model = gated
    with agent_client(running.address, stream_store=store) as client:
        sent = client.conversation("assistant", "c1").send("via the client", wait=False)
    wait_until(lambda: len(model.calls) == 1)

    refused = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "ifBusy": "reject"})
    model.gate.set()
    parse_sse(running.request("GET", f"{BASE}/c1/turns/{sent['turnId']}/stream").body)  # the client's turn ended

    assert (refused.status, refused.json()["error"]["code"]) == (409, "conversation_busy")
    assert refused.json()["busyWith"] == sent["turnId"]
