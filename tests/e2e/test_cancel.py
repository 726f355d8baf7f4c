"""Cancelling turns and busy conversations over HTTP, against the local host with a turn stream store.

A queued turn that is cancelled never runs; a running one stops at its next step boundary (before the next model or
tool call, or before its commit) and keeps its partial answer, marked, or nothing. `ifBusy` decides what a new turn
does to a conversation with a turn in flight. The model is gated, so each test decides where the running turn is.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from agent_framework import tool
from apps import build_app, make_agent
from chat_clients import GatedChatClient
from faults import crash_before_entity_commit
from hosting import RunningHost
from metrics import counted, install_metric_reader
from streams import HeldListReads, fill_the_disk

from agent_host._streaming.journal import journal_key
from agent_host._streaming.sqlite_store import SqliteStreamStore
from agent_host._streaming.turn_controls import TurnControls

BASE = "/api/agents/assistant/conversations"
BOOK = 'call book_flight {"city": "Oslo"}'
booked: list[str] = []


@tool
def book_flight(city: str) -> str:
    """Book a flight (a side effect the tests count)."""
    booked.append(city)
    return f"Booked {city}."


@tool(approval_mode="always_require")
def refund(order_id: str) -> str:
    """Refund an order."""
    booked.append(f"refund {order_id}")
    return f"Refunded {order_id}."


@pytest.fixture
def gated(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[RunningHost, GatedChatClient]]:
    """The local host with a stream store, serving an agent on a gated model (open the gate to let calls answer).

    Parametrized indirectly with a number, the store holds that many reads of the list of accepted turns
    (`running.held`, a `HeldListReads`)."""
    booked.clear()
    client = GatedChatClient()
    store = SqliteStreamStore(tmp_path / "streams.sqlite3")
    held_reads = getattr(request, "param", 0)
    served = HeldListReads(store, held_reads) if held_reads else store
    running = RunningHost(
        lambda: build_app(
            make_agent(client, tools=[book_flight, refund]),
            stream_store=served,
            inspector=True,
            enable_mcp_tool_trigger=True,
        ),
        tmp_path / "host",
    )
    running.held = served
    running.controls = TurnControls(store, "conversation_assistant", "c1")
    running.store = store
    yield running, client
    client.gate.set()
    running.stop()
    store.close()


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def start_turn(running: RunningHost, client: GatedChatClient, body: dict, calls: int) -> str:
    """Post a turn without waiting, and wait until the model has been called `calls` times in all."""
    turn_id = running.request("POST", f"{BASE}/c1/turns", {**body, "wait": False}).json()["turnId"]
    wait_for(lambda: len(client.calls) == calls)
    return turn_id


def wait_for_cancel_request(running: RunningHost, turn_id: str) -> None:
    """Wait until a cancel of the turn (a cancel request or an ifBusy post in flight) is stored for it to see."""
    wait_for(lambda: asyncio.run(running.controls.cancel_requested(turn_id)) is not None)


def cancel(running: RunningHost, turn_id: str, body: dict | None = None, **headers: str):
    return running.request("POST", f"{BASE}/c1/turns/{turn_id}/cancel", body, headers=headers or None)


def messages(running: RunningHost) -> list[dict]:
    return running.request("GET", f"{BASE}/c1/messages").json()["messages"]


def stream_events(running: RunningHost, turn_id: str) -> list[tuple[str, dict]]:
    reply = running.request("GET", f"{BASE}/c1/turns/{turn_id}/stream")
    events = []
    for block in reply.body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_a_queued_turn_that_is_cancelled_never_runs(gated) -> None:
    running, client = gated
    start_turn(running, client, {"message": "first"}, calls=1)
    queued = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "wait": False}).json()["turnId"]

    cancelled = cancel(running, queued)
    client.gate.set()
    running.wait_idle()
    read = running.request("GET", f"{BASE}/c1/turns/{queued}")

    assert cancelled.status == 200
    assert cancelled.json() == {
        "conversationId": "c1",
        "turnId": queued,
        "status": "cancelled",
        "cancel": {"keep": "partial", "ran": False},
    }
    assert len(client.calls) == 1  # the model never saw "second"
    assert read.status == 200 and read.json()["status"] == "cancelled"
    assert read.json()["cancel"] == {"keep": "partial", "ran": False} and read.json()["messages"] == []
    assert "second" not in [m["text"] for m in messages(running)]


def test_a_running_turn_stops_before_its_tool_and_keeps_its_partial_answer_marked(gated) -> None:
    running, client = gated
    turn = start_turn(running, client, {"message": BOOK, "stream": True}, calls=1)

    stopping = cancel(running, turn, {"wait": False})
    client.gate.set()
    running.wait_idle()
    read = running.request("GET", f"{BASE}/c1/turns/{turn}").json()
    stored = messages(running)
    events = stream_events(running, turn)
    inspected = running.request("GET", "/api/inspector/agents/assistant/conversations/c1").json()["turns"]

    assert stopping.status == 202 and stopping.json()["status"] == "cancelling"
    assert booked == [] and len(client.calls) == 1  # no tool call and no second model call
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "partial", "ran": True}
    answer = stored[1:]
    assert [m["role"] for m in answer] == ["assistant", "tool"]
    assert answer[0]["contents"][0]["type"] == "function_call"
    assert answer[1]["contents"][0]["result"] == "Not run: the turn was cancelled before this tool ran."
    assert all(m["annotations"]["_cancelled"] == "partial" for m in answer)
    assert "_cancelled" not in (stored[0].get("annotations") or {})  # the user's message is not part of the answer
    assert events[-1][0] == "turn.cancelled" and events[-1][1]["status"] == "cancelled"
    assert (inspected[-1]["status"], inspected[-1]["cancel"]) == ("cancelled", {"keep": "partial", "ran": True})


def test_a_running_turn_cancelled_keeping_nothing_leaves_the_conversation_as_it_was(gated) -> None:
    running, client = gated
    client.gate.set()
    running.request("POST", f"{BASE}/c1/turns", {"message": "setup"})
    before = messages(running)
    client.gate.clear()
    turn = start_turn(running, client, {"message": BOOK, "stream": True}, calls=2)

    stopping = cancel(running, turn, {"keep": "nothing", "wait": False})
    client.gate.set()
    running.wait_idle()
    read = running.request("GET", f"{BASE}/c1/turns/{turn}").json()
    events = stream_events(running, turn)

    assert stopping.status == 202
    assert booked == []
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "nothing", "ran": True}
    assert read["messages"] == [] and read["text"] == ""
    assert messages(running) == before
    assert events[-1][0] == "turn.cancelled"


def test_a_cancel_that_waits_answers_200_once_the_turn_stopped(gated) -> None:
    running, client = gated
    turn = start_turn(running, client, {"message": BOOK}, calls=1)

    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(cancel, running, turn)
        wait_for_cancel_request(running, turn)
        client.gate.set()
        answered = waiting.result(30)

    assert answered.status == 200
    assert answered.json()["status"] == "cancelled" and answered.json()["cancel"]["ran"] is True
    assert booked == []


def test_cancelling_a_finished_turn_answers_409_with_its_status_every_time(gated) -> None:
    running, client = gated
    client.gate.set()
    turn = running.request("POST", f"{BASE}/c1/turns", {"message": "hello"}).json()["turnId"]

    first = cancel(running, turn)
    again = cancel(running, turn, {"keep": "nothing"}, **{"Idempotency-Key": "cancel-1"})

    for reply in (first, again):
        assert reply.status == 409
        assert reply.json()["error"]["code"] == "turn_finished"
        assert reply.json()["status"] == "completed" and reply.json()["turnId"] == turn
    assert running.request("GET", f"{BASE}/c1/turns/{turn}").json()["status"] == "completed"


def test_a_repeated_cancel_gets_the_same_answer_and_the_first_keep_holds(gated) -> None:
    running, client = gated
    turn = start_turn(running, client, {"message": BOOK}, calls=1)

    first = cancel(running, turn, {"wait": False})
    second = cancel(running, turn, {"keep": "nothing", "wait": False})
    client.gate.set()
    running.wait_idle()
    after = [cancel(running, turn, {"keep": "nothing"}) for _ in range(2)]

    assert (first.status, second.status) == (202, 202)
    assert [reply.status for reply in after] == [200, 200]
    assert after[0].json() == after[1].json()
    assert after[0].json()["cancel"] == {"keep": "partial", "ran": True}


def test_cancel_refuses_unknown_turns_and_bad_bodies(gated) -> None:
    running, client = gated
    client.gate.set()
    running.request("POST", f"{BASE}/c1/turns", {"message": "hello"})

    unknown = cancel(running, "0000000000000000000")
    bad_keep = cancel(running, "0000000000000000000", {"keep": "some"})
    bad_key = cancel(running, "0000000000000000000", None, **{"Idempotency-Key": "k" * 256})

    assert (unknown.status, unknown.json()["error"]["code"]) == (404, "turn_not_found")
    assert (bad_keep.status, bad_keep.json()["error"]["code"]) == (400, "invalid_request")
    assert "partial, nothing" in bad_keep.json()["error"]["message"]
    assert (bad_key.status, bad_key.json()["error"]["code"]) == (400, "invalid_idempotency_key")


def test_if_busy_reject_refuses_concurrent_turns_and_stores_nothing(gated) -> None:
    running, client = gated
    turn = start_turn(running, client, {"message": "first"}, calls=1)

    with ThreadPoolExecutor(4) as pool:
        posts = [
            pool.submit(running.request, "POST", f"{BASE}/c1/turns", {"message": f"second {n}", "ifBusy": "reject"})
            for n in range(4)
        ]
        refused = [post.result(30) for post in posts]
    client.gate.set()
    running.wait_idle()
    later = running.request("POST", f"{BASE}/c1/turns", {"message": "third", "ifBusy": "reject"})

    assert [reply.status for reply in refused] == [409] * 4
    assert {reply.json()["error"]["code"] for reply in refused} == {"conversation_busy"}
    assert {reply.json()["busyWith"] for reply in refused} == {turn}
    assert len(client.calls) == 2  # "first", then "third" once the conversation was idle
    assert later.status == 200 and later.json()["text"] == "reply 2: third"
    assert [m["text"] for m in messages(running) if m["role"] == "user"] == ["first", "third"]


@pytest.mark.parametrize("gated", [4], indirect=True)
def test_of_reject_posts_racing_for_an_idle_conversation_exactly_one_is_taken(gated) -> None:
    running, client = gated

    with ThreadPoolExecutor(4) as pool:
        posts = [
            pool.submit(
                running.request,
                "POST",
                f"{BASE}/c1/turns",
                {"message": f"racing {n}", "ifBusy": "reject", "wait": False},
            )
            for n in range(4)
        ]
        assert running.held.all_held.wait(30)  # every post found the conversation idle before any was listed
        running.held.release.set()
        replies = [post.result(30) for post in posts]
    client.gate.set()
    running.wait_idle()

    taken = [reply for reply in replies if reply.status == 202]
    refused = [reply for reply in replies if reply.status == 409]
    assert (len(taken), len(refused)) == (1, 3)
    winner = taken[0].json()["turnId"]
    assert {reply.json()["error"]["code"] for reply in refused} == {"conversation_busy"}
    assert {reply.json()["busyWith"] for reply in refused} == {winner}
    assert len(client.calls) == 1  # the refused turns were never signalled
    sent = [m["text"] for m in messages(running) if m["role"] == "user"]
    assert len(sent) == 1 and sent[0].startswith("racing ")
    assert running.request("GET", f"{BASE}/c1/turns/{winner}").json()["text"] == f"reply 1: {sent[0]}"


@pytest.mark.parametrize("gated", [1], indirect=True)
def test_a_reject_post_that_found_the_conversation_idle_loses_to_a_turn_listed_before_its_own(gated) -> None:
    running, client = gated

    with ThreadPoolExecutor(1) as pool:
        rejecting = pool.submit(
            running.request, "POST", f"{BASE}/c1/turns", {"message": "if idle", "ifBusy": "reject", "wait": False}
        )
        assert running.held.all_held.wait(30)  # it read the list: nothing in flight yet
        enqueued = running.request("POST", f"{BASE}/c1/turns", {"message": "first", "wait": False})
        running.held.release.set()
        refused = rejecting.result(30)
    client.gate.set()
    running.wait_idle()

    assert enqueued.status == 202
    assert (refused.status, refused.json()["error"]["code"]) == (409, "conversation_busy")
    assert refused.json()["busyWith"] == enqueued.json()["turnId"]
    assert [m["text"] for m in messages(running) if m["role"] == "user"] == ["first"]


def posted_while_a_booking_turn_runs(
    running: RunningHost, client: GatedChatClient, if_busy: str
) -> tuple[Any, dict[str, Any]]:
    """Post "actually, Bergen" with `ifBusy` while a booking turn waits in its model; the answer, and the first turn
    as read once the new one answered."""
    first = start_turn(running, client, {"message": BOOK}, calls=1)
    with ThreadPoolExecutor(1) as pool:
        posted = pool.submit(
            running.request, "POST", f"{BASE}/c1/turns", {"message": "actually, Bergen", "ifBusy": if_busy}
        )
        wait_for_cancel_request(running, first)
        client.gate.set()
        answered = posted.result(30)
    return answered, running.request("GET", f"{BASE}/c1/turns/{first}").json()


def test_if_busy_interrupt_stops_the_running_turn_and_the_new_turn_sees_its_partial_answer(gated) -> None:
    running, client = gated
    answered, read = posted_while_a_booking_turn_runs(running, client, "interrupt")

    assert booked == []
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "partial", "ran": True}
    assert answered.status == 200 and answered.json()["text"] == "reply 2: actually, Bergen"
    seen = [(m.role, [c.type for c in m.contents]) for m in client.calls[-1]]
    assert seen == [
        ("user", ["text"]),
        ("assistant", ["function_call"]),
        ("tool", ["function_result"]),
        ("user", ["text"]),
    ]


def test_if_busy_rollback_stops_the_running_turn_and_the_new_turn_sees_nothing_of_it(gated) -> None:
    running, client = gated
    answered, read = posted_while_a_booking_turn_runs(running, client, "rollback")

    assert booked == []
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "nothing", "ran": True}
    assert answered.status == 200
    assert [m.text for m in client.calls[-1]] == ["actually, Bergen"]


def test_if_busy_interrupt_also_stops_a_queued_turn(gated) -> None:
    running, client = gated
    start_turn(running, client, {"message": "first"}, calls=1)
    queued = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "wait": False}).json()["turnId"]

    with ThreadPoolExecutor(1) as pool:
        interrupting = pool.submit(
            running.request, "POST", f"{BASE}/c1/turns", {"message": "third", "ifBusy": "interrupt"}
        )
        wait_for_cancel_request(running, queued)
        client.gate.set()
        answered = interrupting.result(30)

    assert answered.status == 200
    assert running.request("GET", f"{BASE}/c1/turns/{queued}").json()["cancel"] == {"keep": "partial", "ran": False}
    assert [m["text"] for m in messages(running) if m["role"] == "user"] == ["first", "third"]


def test_if_busy_enqueue_is_the_default_and_other_values_are_refused(gated) -> None:
    running, client = gated
    start_turn(running, client, {"message": "first"}, calls=1)

    queued = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "wait": False, "ifBusy": "enqueue"})
    wrong = running.request("POST", f"{BASE}/c1/turns", {"message": "third", "ifBusy": "replace"})
    client.gate.set()
    running.wait_idle()

    assert queued.status == 202
    assert (wrong.status, wrong.json()["error"]["code"]) == (400, "invalid_request")
    assert "enqueue, reject, interrupt, rollback" in wrong.json()["error"]["message"]
    assert len(client.calls) == 2


def test_a_rolled_back_turn_that_answered_an_approval_leaves_it_pending(gated) -> None:
    running, client = gated
    client.gate.set()
    asked = running.request("POST", f"{BASE}/c1/turns", {"message": 'call refund {"order_id": "A17"}'}).json()
    request_id = asked["approvalRequests"][0]["id"]
    client.gate.clear()
    answering = start_turn(running, client, {"approvals": [{"id": request_id, "approved": True}]}, calls=2)

    # The approved tool ran before the model was called again; the model call is where the turn is held.
    stopped = cancel(running, answering, {"keep": "nothing", "wait": False})
    client.gate.set()
    running.wait_idle()
    conversation = running.request("GET", f"{BASE}/c1").json()

    assert stopped.status == 202
    assert booked == ["refund A17"]  # a tool that ran before the cancel is not undone
    assert running.request("GET", f"{BASE}/c1/turns/{answering}").json()["cancel"]["keep"] == "nothing"
    assert [approval["id"] for approval in conversation["pendingApprovals"]] == [request_id]


def test_a_cancelled_queued_turn_stays_cancelled_across_a_restart(gated) -> None:
    running, client = gated
    start_turn(running, client, {"message": "first"}, calls=1)
    queued = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "wait": False}).json()["turnId"]
    cancel(running, queued)

    client.gate.set()
    running.restart()
    running.wait_idle()
    after = cancel(running, queued)
    busy = running.request("POST", f"{BASE}/c1/turns", {"message": "third", "ifBusy": "reject"})

    assert after.status == 200 and after.json()["cancel"] == {"keep": "partial", "ran": False}
    assert "second" not in [m.text for call in client.calls for m in call]
    assert busy.status == 200  # nothing in flight after the restart: the cancelled turn is not busy


def test_if_busy_reject_refuses_an_approval_answer_while_busy_and_the_approval_stays_answerable(gated) -> None:
    running, client = gated
    client.gate.set()
    asked = running.request("POST", f"{BASE}/c1/turns", {"message": 'call refund {"order_id": "A17"}'}).json()
    approval = {"id": asked["approvalRequests"][0]["id"], "approved": True}
    client.gate.clear()
    start_turn(running, client, {"message": "first"}, calls=2)

    refused = running.request("POST", f"{BASE}/c1/turns", {"approvals": [approval], "ifBusy": "reject"})
    client.gate.set()
    running.wait_idle()
    pending = running.request("GET", f"{BASE}/c1").json()["pendingApprovals"]
    answered = running.request("POST", f"{BASE}/c1/turns", {"approvals": [approval], "ifBusy": "reject"})

    assert (refused.status, refused.json()["error"]["code"]) == (409, "conversation_busy")
    assert [request["id"] for request in pending] == [approval["id"]]
    assert answered.status == 200 and booked == ["refund A17"]


def test_a_turn_cancelled_while_running_is_not_run_again_after_a_crash_before_its_commit(gated) -> None:
    running, client = gated
    crashes = [True]
    crash_before_entity_commit(running.host.scheduler, lambda name, key, batch: bool(crashes and crashes.pop()))
    turn = start_turn(running, client, {"message": BOOK}, calls=1)

    stopping = cancel(running, turn, {"wait": False})
    client.gate.set()
    running.wait_idle()
    read = running.request("GET", f"{BASE}/c1/turns/{turn}").json()

    assert stopping.status == 202 and crashes == []
    # Its first attempt stopped before the tool and was lost with the crash; the redelivered one did not run at all.
    assert len(client.calls) == 1 and booked == []
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "partial", "ran": True}
    assert read["messages"] == []


def call_agent_tool(running: RunningHost, arguments: dict[str, Any]) -> Any:
    """Call the agent's MCP tool over Streamable HTTP (one JSON-RPC message, answered when the turn settles)."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "assistant", "arguments": arguments}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return running.request("POST", "/runtime/webhooks/mcp", headers=headers, raw=json.dumps(call).encode())


# Each front door taking a turn of conversation c1 with the message "via <door>".
FRONT_DOORS: dict[str, Callable[[RunningHost], Any]] = {
    "turns": lambda running: running.request("POST", f"{BASE}/c1/turns", {"message": "via turns", "wait": False}),
    "run": lambda running: running.request(
        "POST", "/api/agents/assistant/run", {"message": "via run", "session_id": "c1", "wait_for_response": False}
    ),
    "agui": lambda running: running.request(
        "POST",
        "/api/agents/assistant/agui",
        {"threadId": "c1", "runId": "run-1", "messages": [{"id": "u1", "role": "user", "content": "via agui"}]},
    ),
    "openai": lambda running: running.request(
        "POST",
        "/api/openai/v1/responses",
        {"model": "assistant", "input": "via openai", "conversation": "c1", "background": True},
    ),
    "mcp": lambda running: call_agent_tool(running, {"query": "via mcp", "sessionId": "c1"}),
}


@pytest.mark.parametrize("door", sorted(FRONT_DOORS))
def test_a_turn_taken_through_any_front_door_is_in_flight_for_if_busy_and_cancel(gated, door: str) -> None:
    running, client = gated

    with ThreadPoolExecutor(1) as pool:
        taking = pool.submit(FRONT_DOORS[door], running)
        wait_for(lambda: len(client.calls) == 1)
        refused = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "ifBusy": "reject"})
        busy_with = str(refused.json().get("busyWith"))
        stopping = cancel(running, busy_with, {"wait": False})
        client.gate.set()
        taking.result(30)
    running.wait_idle()
    read = running.request("GET", f"{BASE}/c1/turns/{busy_with}").json()

    assert (refused.status, refused.json()["error"]["code"]) == (409, "conversation_busy")
    assert stopping.status == 202 and stopping.json()["status"] == "cancelling"
    assert read["status"] == "cancelled" and read["cancel"] == {"keep": "partial", "ran": True}
    assert [m["text"] for m in messages(running) if m["role"] == "user"] == [f"via {door}"]
    assert len(client.calls) == 1  # "second" was never run


def full_disk_failure(running: RunningHost, stream: str) -> str:
    """What the full store says when an append to this stream of conversation c1 fails."""
    return (
        f"the turn stream store (SQLite file {running.store.path}) could not append to stream "
        f"'conversation_assistant/c1/{stream}': OperationalError: database or disk is full"
    )


def test_on_a_full_disk_a_turn_runs_unjournaled_counted_and_commits(gated, monkeypatch) -> None:
    running, client = gated
    reader = install_metric_reader(monkeypatch)
    fill_the_disk(running.store)
    client.gate.set()

    answered = running.request("POST", f"{BASE}/c1/turns", {"message": BOOK})
    turn = answered.json()["turnId"]

    assert answered.status == 200 and answered.json()["status"] == "completed"
    assert answered.json()["text"] == "tool said Booked Oslo."
    assert booked == ["Oslo"] and len(client.calls) == 2
    journal = asyncio.run(running.store.read(journal_key(f"conversation_assistant/c1/{turn}")))
    assert journal == []
    assert counted(reader, "agent_host.checkpoints.unavailable") == {
        (("agent", "assistant"), ("reason", "journal_write_failed")): 1
    }


def test_on_a_full_disk_a_cancel_answers_503_saying_the_turn_was_not_asked_to_stop(gated) -> None:
    running, client = gated
    fill_the_disk(running.store)
    turn = start_turn(running, client, {"message": "first"}, calls=1)

    refused = cancel(running, turn)
    client.gate.set()
    running.wait_idle()

    assert refused.status == 503
    assert refused.json() == {
        "conversationId": "c1",
        "turnId": turn,
        "error": {
            "code": "storage_unavailable",
            "message": f"Turn '{turn}' of conversation 'c1' was not asked to stop: "
            f"{full_disk_failure(running, f'{turn}.cancel')}. The turn goes on as if no cancel had been sent; "
            "retry the cancel shortly.",
        },
    }
    assert running.request("GET", f"{BASE}/c1/turns/{turn}").json()["status"] == "completed"


@pytest.mark.parametrize("if_busy", ["reject", "interrupt", "rollback"])
def test_on_a_full_disk_an_if_busy_turn_answers_503_and_is_not_taken(gated, if_busy: str) -> None:
    running, client = gated
    fill_the_disk(running.store)
    first = start_turn(running, client, {"message": "first"}, calls=1)

    refused = running.request("POST", f"{BASE}/c1/turns", {"message": "second", "ifBusy": if_busy})
    client.gate.set()
    running.wait_idle()

    assert refused.status == 503
    assert refused.json() == {
        "conversationId": "c1",
        "error": {
            "code": "storage_unavailable",
            "message": f'The turn was not taken: "ifBusy": "{if_busy}" orders it among the turns in flight of '
            f"conversation 'c1', and {full_disk_failure(running, 'accepted.turns')}. Nothing was stored for it and "
            'the model was not called. Retry shortly, or send "ifBusy": "enqueue", which runs the turn without that '
            "record.",
        },
    }
    assert len(client.calls) == 1
    assert running.request("GET", f"{BASE}/c1/turns/{first}").json()["status"] == "completed"
    assert [m["text"] for m in messages(running) if m["role"] == "user"] == ["first"]


def test_with_the_store_down_a_reject_answers_503_and_an_enqueued_turn_still_runs(gated) -> None:
    running, client = gated
    running.store.close()  # every read and write now fails
    client.gate.set()

    refused = running.request("POST", f"{BASE}/c1/turns", {"message": "if idle", "ifBusy": "reject"})
    answered = running.request("POST", f"{BASE}/c1/turns", {"message": "hello"})

    assert refused.status == 503 and refused.json()["error"]["code"] == "storage_unavailable"
    assert refused.json()["error"]["message"] == (
        'The turn was not taken: "ifBusy": "reject" orders it among the turns in flight of conversation \'c1\', '
        f"and the turn stream store (SQLite file {running.store.path}) could not read stream "
        "'conversation_assistant/c1/accepted.turns': the store was closed. Nothing was stored for it and the model "
        'was not called. Retry shortly, or send "ifBusy": "enqueue", which runs the turn without that record.'
    )
    assert answered.status == 200 and answered.json()["text"] == "reply 1: hello"
    assert [m["text"] for m in messages(running) if m["role"] == "user"] == ["hello"]
