"""Streamed turns over HTTP through the local host: event streams, resuming, replay, and the bad cases.

Every test runs in both shapes of HTTP function: `classic` (azure.functions types; an event stream is sent whole
when it ends) and `streams` (the FastAPI types of HTTP streams; sent as it is produced).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from apps import build_app, make_agent
from chat_clients import FailingChatClient, MidStreamFailingChatClient, StreamingChatClient, default_reply
from clocks import ManualClock
from faults import crash_before_entity_commit
from hosting import RunningHost
from streams import (
    MemoryTurnStreamStore,
    Sse,
    cancel_order,
    open_stream,
    parse_sse,
)
from test_serve_command import ROOT, free_port

from agent_host import HostSettings, OfflineChatClient
from agent_host._conversation.turn_receipts import new_turn_id
from agent_host._streaming.channel import stream_key
from agent_host._streaming.sqlite_store import SqliteStreamStore

AGENT_PATH = "/api/agents/assistant/conversations"
SSE = {"Accept": "text/event-stream"}


class Host:
    """A running local host, its stream store, and the mode its HTTP functions are in."""

    def __init__(self, running: RunningHost, store: MemoryTurnStreamStore, streams: bool) -> None:
        self.running = running
        self.store = store
        self.streams = streams

    def post_events(self, conversation: str, message: str, headers: dict[str, str] | None = None) -> list[Sse]:
        reply = self.running.request(
            "POST", f"{AGENT_PATH}/{conversation}/turns", {"message": message}, headers={**SSE, **(headers or {})}
        )
        assert reply.status == 200, reply.body
        assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
        return parse_sse(reply.body)

    def stream(self, conversation: str, turn_id: str, last_event_id: int | None = None) -> tuple[int, bytes]:
        headers = dict(SSE)
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        reply = self.running.request("GET", f"{AGENT_PATH}/{conversation}/turns/{turn_id}/stream", headers=headers)
        return reply.status, reply.body


def host_for(tmp_path: Path, mode: str, agent_factory: Any, **app_kwargs: Any) -> Host:
    store = MemoryTurnStreamStore()
    streams = mode == "streams"
    running = RunningHost(
        lambda: build_app(agent_factory(), stream_store=store, http_streams=streams, **app_kwargs), tmp_path
    )
    return Host(running, store, streams)


@pytest.fixture(params=["classic", "streams"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    running = host_for(tmp_path, request.param, lambda: make_agent(StreamingChatClient()))
    yield running
    running.running.stop()


def test_a_turn_asked_for_as_an_event_stream_ends_with_the_body_a_waited_turn_returns(host: Host) -> None:
    events = host.post_events("c1", "Tell me about streams")

    started, *middle, last = events
    assert (started.event, started.id) == ("turn.started", 1)
    turn_id = started.data["turnId"]
    assert [e.event for e in middle] == ["message.delta"] * len(middle) and len(middle) >= 1
    assert "".join(e.data["text"] for e in middle) == "reply 1: Tell me about streams"
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    waited = host.running.request("GET", f"{AGENT_PATH}/c1/turns/{turn_id}")
    assert (last.event, last.data) == ("turn.completed", waited.json())
    assert last.data["text"] == "reply 1: Tell me about streams"


def test_resuming_after_any_event_sends_exactly_the_rest(host: Host) -> None:
    events = host.post_events("c1", "one two three four five six")
    turn_id = events[0].data["turnId"]

    for seen in range(len(events) + 1):
        status, body = host.stream("c1", turn_id, last_event_id=seen)

        assert status == 200
        assert [(e.id, e.event, e.data) for e in parse_sse(body)] == [(e.id, e.event, e.data) for e in events[seen:]]


def test_a_finished_turn_is_replayed_then_the_stream_ends(host: Host) -> None:
    events = host.post_events("c1", "hello")

    status, body = host.stream("c1", events[0].data["turnId"])

    assert status == 200
    assert [(e.id, e.event, e.data) for e in parse_sse(body)] == [(e.id, e.event, e.data) for e in events]


def test_a_waited_turn_streams_from_its_receipt(host: Host) -> None:
    reply = host.running.request("POST", f"{AGENT_PATH}/c1/turns", {"message": "no stream asked"})
    turn_id = reply.json()["turnId"]

    status, body = host.stream("c1", turn_id)

    events = parse_sse(body)
    assert status == 200
    assert [e.event for e in events] == ["turn.started", "message.delta", "turn.completed"]
    assert events[1].data == {
        "messageId": reply.json()["messages"][0]["messageId"],
        "role": "assistant",
        "text": "reply 1: no stream asked",
    }
    assert events[-1].data == reply.json()
    # Nothing was streamed: the store holds only the turn controls a cancel or ifBusy reads (running, accepted).
    assert stream_key("conversation_assistant", "c1", turn_id) not in host.store.streams


def test_unknown_expired_and_bad_last_event_id_are_refused_before_the_stream(tmp_path: Path) -> None:
    running = host_for(
        tmp_path, "classic", lambda: make_agent(StreamingChatClient()), settings=HostSettings(max_turn_records=1)
    )
    try:
        first = running.post_events("c1", "first")[0].data["turnId"]
        running.post_events("c1", "second")

        unknown = running.running.request("GET", f"{AGENT_PATH}/c1/turns/0000000000000000000/stream")
        expired = running.running.request("GET", f"{AGENT_PATH}/c1/turns/{first}/stream")
        bad = running.running.request(
            "GET", f"{AGENT_PATH}/c1/turns/{first}/stream", headers={"Last-Event-ID": "three"}
        )
        nowhere = running.running.request("GET", f"{AGENT_PATH}/c2/turns/0000000000000000000/stream")
    finally:
        running.running.stop()

    assert (unknown.status, unknown.json()["error"]["code"]) == (404, "turn_not_found")
    assert (expired.status, expired.json()["error"]["code"]) == (410, "turn_expired")
    assert (bad.status, bad.json()["error"]["code"]) == (400, "invalid_last_event_id")
    assert "Last-Event-ID" in bad.json()["error"]["message"]
    assert (nowhere.status, nowhere.json()["error"]["code"]) == (404, "turn_not_found")


def test_the_stream_of_a_deleted_conversation_is_a_404(host: Host) -> None:
    turn_id = host.post_events("c1", "hello")[0].data["turnId"]
    assert host.running.request("DELETE", f"{AGENT_PATH}/c1").status == 204

    status, body = host.stream("c1", turn_id)

    assert status == 404
    assert b'"conversation_not_found"' in body


def test_a_turn_that_fails_ends_its_stream_with_the_error_and_keeps_the_conversation(tmp_path: Path) -> None:
    running = host_for(tmp_path, "streams", lambda: make_agent(FailingChatClient()))
    try:
        events = running.post_events("c1", "hello")
        conversation = running.running.request("GET", f"{AGENT_PATH}/c1").json()
    finally:
        running.running.stop()

    assert [e.event for e in events] == ["turn.started", "turn.failed"]
    assert events[-1].data["status"] == "failed"
    assert events[-1].data["error"]["code"] == "turn_failed"
    assert events[-1].data["error"]["message"].startswith("The agent run failed (RuntimeError).")
    assert "secret-detail" not in str(events[-1].data)
    assert (conversation["messageCount"], conversation["turnCount"]) == (0, 0)


def test_the_stream_is_sent_as_it_is_produced_with_http_streams(tmp_path: Path) -> None:
    running = host_for(tmp_path, "streams", lambda: make_agent(OfflineChatClient(word_delay_seconds=0.15)))
    try:
        stream = open_stream(running.running.host.base_url, "POST", f"{AGENT_PATH}/c1/turns", {"message": "hi"})
        arrivals = [(time.monotonic(), event) for event in stream.events()]
        stream.close()
    finally:
        running.running.stop()

    first_delta = next(at for at, event in arrivals if event.event == "message.delta")
    last = arrivals[-1][0]
    assert arrivals[-1][1].event == "turn.completed"
    words = len(arrivals[-1][1].data["text"].split())
    # The words came apart, paced by the model: the first long before the last.
    assert last - first_delta > 0.15 * (words - 2)


def test_a_client_that_hangs_up_does_not_stop_the_turn(tmp_path: Path) -> None:
    running = host_for(tmp_path, "streams", lambda: make_agent(OfflineChatClient(word_delay_seconds=0.05)))
    try:
        stream = open_stream(running.running.host.base_url, "POST", f"{AGENT_PATH}/c1/turns", {"message": "hello"})
        events = stream.events()
        started = next(events)
        next(e for e in events if e.event == "message.delta")
        stream.close()
        running.running.wait_idle()
        status, body = running.stream("c1", started.data["turnId"], last_event_id=started.id)
    finally:
        running.running.stop()

    resumed = parse_sse(body)
    assert status == 200
    assert resumed[0].id == started.id + 1
    assert resumed[-1].event == "turn.completed"
    assert "".join(e.data["text"] for e in resumed if e.event == "message.delta") == resumed[-1].data["text"]


def test_a_turn_run_again_after_a_crash_streams_the_new_attempt_after_the_old(tmp_path: Path) -> None:
    running = host_for(tmp_path, "streams", lambda: make_agent(StreamingChatClient()))
    crashes = ["once"]
    crash_before_entity_commit(running.running.host.scheduler, lambda name, key, batch: bool(crashes and crashes.pop()))
    try:
        live = running.post_events("c1", "say it twice")
        turn_id = live[0].data["turnId"]
        stored = running.store.events(f"conversation_assistant/c1/{turn_id}")
        _, late = running.stream("c1", turn_id)
        second_start = [e.id for e in stored if e.event == "turn.started"][1]
        _, resumed = running.stream("c1", turn_id, last_event_id=second_start - 2)  # inside the first attempt
    finally:
        running.running.stop()

    starts = [e for e in stored if e.event == "turn.started"]
    assert [e.data["attempt"] for e in starts] == [1, 2]
    assert [e.id for e in stored] == list(range(1, len(stored) + 1))
    for events in (live, parse_sse(late), parse_sse(resumed)):
        ids = [e.id for e in events]
        assert ids == sorted(set(ids))
        last_start = max(i for i, e in enumerate(events) if e.event == "turn.started")
        assert events[last_start].data["attempt"] == 2
        text = "".join(e.data["text"] for e in events[last_start:] if e.event == "message.delta")
        # The second attempt replays the model call the first journaled (checkpoints): the model answered once.
        assert text == events[-1].data["text"] == "reply 1: say it twice"
    # Read after the fact, the superseded attempt is left out entirely.
    assert [e.event for e in parse_sse(late)].count("turn.started") == 1
    assert parse_sse(resumed)[0].event == "turn.started"


def test_a_retry_with_the_same_idempotency_key_streams_the_original_turn(host: Host) -> None:
    first = host.post_events("c1", "only once", headers={"Idempotency-Key": "k-1"})
    again = host.post_events("c1", "only once", headers={"Idempotency-Key": "k-1"})

    assert [(e.id, e.event, e.data) for e in again] == [(e.id, e.event, e.data) for e in first]
    assert len(host.running.request("GET", f"{AGENT_PATH}/c1/messages").json()["messages"]) == 2


def test_without_a_stream_store_a_streamed_request_ends_with_the_replayed_answer(tmp_path: Path) -> None:
    running = RunningHost(lambda: build_app(make_agent(StreamingChatClient()), http_streams=True), tmp_path)
    try:
        reply = running.request("POST", f"{AGENT_PATH}/c1/turns", {"message": "hello"}, headers=SSE)
    finally:
        running.stop()

    events = parse_sse(reply.body)
    assert [e.event for e in events] == ["turn.started", "message.delta", "turn.completed"]
    assert events[1].data["text"] == events[2].data["text"] == "reply 1: hello"


def test_a_reader_resumes_without_gaps_or_repeats_across_a_host_restart(tmp_path: Path) -> None:
    # The local host's own store: a SQLite file beside the entity store, opened again by the restarted host.
    stores: list[SqliteStreamStore] = []

    def app() -> Any:
        stores.append(SqliteStreamStore.in_state_dir(tmp_path))
        agent = make_agent(OfflineChatClient(word_delay_seconds=0.03))
        return build_app(agent, stream_store=stores[-1], http_streams=True)

    running = RunningHost(app, tmp_path)
    try:
        message = {"message": "My name is Ada and my favourite color is teal."}
        stream = open_stream(running.host.base_url, "POST", f"{AGENT_PATH}/c1/turns", message)
        events = stream.events()
        seen = [next(events), next(events), next(events)]
        stream.close()
        running.restart()  # a graceful stop lets the running turn finish and commit first
        reply = running.request(
            "GET",
            f"{AGENT_PATH}/c1/turns/{seen[0].data['turnId']}/stream",
            headers={**SSE, "Last-Event-ID": str(seen[-1].id)},
        )
        whole = running.request("GET", f"{AGENT_PATH}/c1/turns/{seen[0].data['turnId']}/stream", headers=SSE)
    finally:
        running.stop()
        for store in stores:
            store.close()

    rest = parse_sse(reply.body)
    assert [e.id for e in seen + rest] == list(range(1, len(seen) + len(rest) + 1))
    assert [(e.id, e.data) for e in seen + rest] == [(e.id, e.data) for e in parse_sse(whole.body)]
    text = "".join(e.data["text"] for e in seen + rest if e.event == "message.delta")
    assert text == rest[-1].data["text"]
    assert text.startswith("[offline model] Noted: your name is Ada, your favourite color is teal.")


def test_serve_streams_the_template_word_by_word_from_its_own_sqlite_store(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_OPENAI", "OPENAI", "AGENT_HOST_"))}
    command = [sys.executable, "-m", "agent_host", "serve", "--port", str(port), "--state-dir", str(tmp_path)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        banner, deadline = "", time.monotonic() + 60
        while "Listening on" not in banner and time.monotonic() < deadline:
            banner += process.stdout.readline()
        stream = open_stream(f"http://127.0.0.1:{port}", "POST", f"{AGENT_PATH}/cli/turns", {"message": "Hello there"})
        events = list(stream.events())
        stream.close()
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()

    deltas = [e.data["text"] for e in events if e.event == "message.delta"]
    assert events[-1].event == "turn.completed"
    assert len(deltas) > 1  # word by word, coalesced at most every 50 ms
    assert "".join(deltas) == events[-1].data["text"]
    assert (tmp_path / "streams.sqlite3").exists()


def test_an_approval_is_asked_for_and_answered_over_streams(tmp_path: Path) -> None:
    offline = OfflineChatClient(word_delay_seconds=0)
    running = host_for(tmp_path, "streams", lambda: make_agent(offline, tools=[cancel_order]))
    try:
        asked = running.post_events("c1", "Please use cancel_order order_id=A17")
        (requested,) = [e.data for e in asked if e.event == "approval.requested"]
        reply = running.running.request(
            "POST",
            f"{AGENT_PATH}/c1/turns",
            {"approvals": [{"id": requested["id"], "approved": True}]},
            headers=SSE,
        )
    finally:
        running.running.stop()

    assert asked[-1].data["approvalRequests"] == [requested]
    assert (requested["toolName"], requested["arguments"]) == ("cancel_order", {"order_id": "A17"})
    answered = parse_sse(reply.body)
    assert [e.data["result"] for e in answered if e.event == "tool.result"] == ["Order A17 is cancelled."]
    assert answered[-1].data["text"] == "[offline model] The tool returned: Order A17 is cancelled."


def test_a_turn_that_fails_mid_stream_ends_with_turn_failed_and_stores_only_the_failure(tmp_path: Path) -> None:
    running = host_for(tmp_path, "streams", lambda: make_agent(MidStreamFailingChatClient()))
    try:
        events = running.post_events("c1", "start and stop")
        conversation = running.running.request("GET", f"{AGENT_PATH}/c1").json()
        messages = running.running.request("GET", f"{AGENT_PATH}/c1/messages").json()["messages"]
    finally:
        running.running.stop()

    assert [e.event for e in events] == ["turn.started", "message.delta", "turn.failed"]
    assert events[1].data["text"] == "Half an "
    assert events[-1].data["error"]["code"] == "turn_failed"
    assert (conversation["messageCount"], conversation["turnCount"], messages) == (0, 0, [])


def test_a_turn_id_of_a_conversation_that_never_had_a_turn_is_404_at_once(tmp_path: Path) -> None:
    # Without the check a made-up id issued "now" stays pending: the stream would poll the state until its deadline.
    clock = ManualClock()
    settings = HostSettings(max_wait_seconds=3, run_timeout_seconds=3)
    running = host_for(tmp_path, "classic", lambda: make_agent(StreamingChatClient()), settings=settings, clock=clock)
    made_up = new_turn_id(clock.now_ms())
    try:
        stream = running.running.request("GET", f"{AGENT_PATH}/never/turns/{made_up}/stream", headers=SSE)
        poll = running.running.request("GET", f"{AGENT_PATH}/never/turns/{made_up}")
    finally:
        running.running.stop()

    assert (stream.status, stream.json()["error"]["code"]) == (404, "turn_not_found")
    assert (poll.status, poll.json()["error"]["code"]) == (404, "turn_not_found")


def test_the_first_turn_of_a_new_conversation_can_be_followed_while_it_runs(tmp_path: Path) -> None:
    gate = threading.Event()
    client = StreamingChatClient(lambda messages, _: gate.wait(10) and default_reply(messages, 1))
    running = host_for(tmp_path, "streams", lambda: make_agent(client))
    try:
        started = running.running.request(
            "POST", f"{AGENT_PATH}/fresh/turns", {"message": "hello", "wait": False, "stream": True}
        )
        turn_id = started.json()["turnId"]
        polled = running.running.request("GET", f"{AGENT_PATH}/fresh/turns/{turn_id}")  # nothing stored yet
        with ThreadPoolExecutor(1) as pool:
            following = pool.submit(running.stream, "fresh", turn_id)
            time.sleep(0.2)
            gate.set()
            status, body = following.result(30)
    finally:
        gate.set()
        running.running.stop()

    events = parse_sse(body)
    assert (started.status, polled.status, polled.json()["status"]) == (202, 202, "pending")
    assert status == 200 and events[-1].event == "turn.completed"
    assert events[-1].data["turnId"] == turn_id and events[-1].data["text"] == "reply 1: hello"
