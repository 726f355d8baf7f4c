"""Exactly-once turns over at-least-once delivery, Idempotency-Key retries, 410 versus 404, and the /run route; the
tests that take `serve` run on both hosts of the HTTP API (the function app, the standalone worker's ASGI app)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from apps import build_app, make_agent
from chat_clients import ScriptedChatClient, default_reply
from faults import crash_before_entity_commit, deliver_twice
from hosting import RunningHost
from worker_hosting import HttpHost, Serve

from agent_host import HostSettings, OfflineChatClient

BASE = "/api/agents/assistant/conversations"


def history(running: HttpHost, conversation: str) -> list[str]:
    reply = running.request("GET", f"{BASE}/{conversation}/messages")
    return [m["text"] for m in reply.json()["messages"]]


def slow_model(seconds: float) -> ScriptedChatClient:
    """A scripted model that takes `seconds` a call, so a retry can arrive while the first turn still runs."""

    def slow(messages: Any, options: Any) -> Any:
        time.sleep(seconds)
        return default_reply(messages, len(client.calls))

    client = ScriptedChatClient(slow)
    return client


def slow_host(
    state_dir: Path, seconds: float, settings: HostSettings | None = None
) -> tuple[RunningHost, ScriptedChatClient]:
    """The local host on a slow model (`slow_model`)."""
    client = slow_model(seconds)
    return RunningHost(lambda: build_app(make_agent(client), settings=settings), state_dir), client


def test_duplicate_delivery_of_the_same_signal_runs_the_model_once(scripted_host) -> None:
    running, client = scripted_host
    assert running.host is not None
    deliver_twice(running.host.scheduler, lambda name, key, signal: True)

    reply = running.request("POST", f"{BASE}/c1/turns", {"message": "hello"})
    running.wait_idle()

    assert reply.json()["text"] == "reply 1: hello"
    assert len(client.calls) == 1
    assert history(running, "c1") == ["hello", "reply 1: hello"]


def test_crash_after_the_model_ran_before_commit_is_redelivered_and_committed_once(scripted_host) -> None:
    running, client = scripted_host
    assert running.host is not None
    crashes = []

    def crash_once(name, key, batch):
        crashes.append(len(batch))
        return len(crashes) == 1

    crash_before_entity_commit(running.host.scheduler, crash_once)

    reply = running.request("POST", f"{BASE}/c1/turns", {"message": "hello"})
    running.wait_idle()

    assert reply.status == 200
    # The crashed delivery called the model but committed nothing; the redelivery is the one committed turn.
    assert len(client.calls) == 2
    assert history(running, "c1") == ["hello", "reply 2: hello"]
    assert reply.json()["text"] == "reply 2: hello"


def test_idempotency_key_retry_returns_the_same_turn_without_a_second_model_call(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(lambda: make_agent(client))
    key = {"Idempotency-Key": "retry-123"}

    first = running.request("POST", f"{BASE}/c1/turns", {"message": "book it"}, headers=key)
    retry = running.request("POST", f"{BASE}/c1/turns", {"message": "book it"}, headers=key)

    assert first.status == retry.status == 200
    assert retry.json()["turnId"] == first.json()["turnId"]
    assert retry.json()["text"] == first.json()["text"] == "reply 1: book it"
    assert len(client.calls) == 1
    assert history(running, "c1") == ["book it", "reply 1: book it"]


def test_idempotency_key_retry_while_the_first_is_still_running_gets_the_first_turn(serve: Serve) -> None:
    # The retry arrives while this turn is still running, before any record exists.
    client = slow_model(0.5)
    running = serve(lambda: make_agent(client))
    key = {"Idempotency-Key": "queued-1"}

    first = running.request("POST", f"{BASE}/c1/turns", {"message": "once", "wait": False}, headers=key)
    retry = running.request("POST", f"{BASE}/c1/turns", {"message": "once"}, headers=key)
    messages = history(running, "c1")

    assert first.status == 202
    assert retry.status == 200
    assert retry.json()["turnId"] == first.json()["turnId"]
    assert retry.json()["text"] == "reply 1: once"
    assert len(client.calls) == 1
    assert messages == ["once", "reply 1: once"]


def test_same_idempotency_key_with_a_different_body_is_409(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(lambda: make_agent(client))
    key = {"Idempotency-Key": "k-1"}
    first = running.request("POST", f"{BASE}/c1/turns", {"message": "first"}, headers=key)

    reply = running.request("POST", f"{BASE}/c1/turns", {"message": "second"}, headers=key)

    assert reply.status == 409
    assert reply.json()["error"] == {
        "code": "idempotency_key_reused",
        "message": f"Idempotency-Key 'k-1' was already used for turn '{first.json()['turnId']}' with a different "
        "request. Use a new key for a new request.",
    }
    assert len(client.calls) == 1
    assert history(running, "c1") == ["first", "reply 1: first"]


def test_an_expired_turn_is_410_and_a_never_seen_turn_is_404(serve: Serve) -> None:
    running = serve(lambda: make_agent(ScriptedChatClient()), HostSettings(max_turn_records=2))
    turn_ids = [running.request("POST", f"{BASE}/c1/turns", {"message": f"m{i}"}).json()["turnId"] for i in range(3)]
    expired = running.request("GET", f"{BASE}/c1/turns/{turn_ids[0]}")
    kept = running.request("GET", f"{BASE}/c1/turns/{turn_ids[2]}")
    never = running.request("GET", f"{BASE}/c1/turns/00000000001deadbeef")

    assert expired.status == 410
    assert expired.json()["status"] == "expired" and expired.json()["error"]["code"] == "turn_expired"
    assert kept.status == 200 and kept.json()["text"] == "reply 3: m2"
    assert never.status == 404 and never.json()["error"]["code"] == "turn_not_found"


@pytest.fixture
def offline(serve: Serve) -> HttpHost:
    return serve(lambda: make_agent(OfflineChatClient()))


def test_run_route_accepts_the_published_hosts_json_shape(offline: HttpHost) -> None:
    offline.request("POST", "/api/agents/assistant/run", {"message": "My name is Ada.", "session_id": "s1"})
    reply = offline.request("POST", "/api/agents/assistant/run", {"message": "What is my name?", "thread_id": "s1"})

    body = reply.json()
    assert reply.status == 200
    assert body["response"] == "[offline model] Your name is Ada."
    assert body["status"] == "success" and body["session_id"] == "s1" and body["message"] == "What is my name?"
    assert body["message_count"] == 4 and body["correlation_id"]
    same = offline.request("GET", f"{BASE}/s1/messages").json()["messages"]
    assert same[0]["text"] == "My name is Ada."


def test_run_route_answers_plain_text_with_the_session_header(offline: HttpHost) -> None:
    headers = {"Content-Type": "text/plain"}
    offline.request("POST", "/api/agents/assistant/run?session_id=t1", raw=b"My city is Oslo.", headers=headers)
    reply = offline.request("POST", "/api/agents/assistant/run?thread_id=t1", raw=b"What is my city?", headers=headers)

    assert reply.status == 200
    assert reply.headers["x-ms-session-id"] == "t1"
    assert reply.headers["content-type"].startswith("text/plain")
    assert reply.body.decode() == "[offline model] Your city is Oslo."


def test_run_route_without_waiting_is_202_with_the_turn_location(offline: HttpHost) -> None:
    reply = offline.request(
        "POST",
        "/api/agents/assistant/run",
        {"message": "hi", "session_id": "s2"},
        headers={"x-ms-wait-for-response": "false"},
    )

    assert reply.status == 202
    assert reply.json()["status"] == "accepted"
    assert reply.headers["location"].endswith(
        f"/api/agents/assistant/conversations/s2/turns/{reply.json()['correlation_id']}"
    )


def test_run_route_rejects_conflicting_session_ids(offline: HttpHost) -> None:
    reply = offline.request("POST", "/api/agents/assistant/run?session_id=a", {"message": "hi", "session_id": "b"})

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "conflicting_session_id"


def test_run_route_without_a_session_starts_a_new_conversation(offline: HttpHost) -> None:
    reply = offline.request("POST", "/api/agents/assistant/run", {"message": "hello"})

    session = reply.json()["session_id"]
    assert len(session) == 32
    assert json.loads(offline.request("GET", f"{BASE}/{session}").body)["turnCount"] == 1


def test_forty_concurrent_retries_of_one_key_run_the_model_once_and_report_one_turn(tmp_path: Path) -> None:
    # Failure 15: with 5 turn records, 39 retries used to write alias records that pushed the original out.
    # Every retry arrives while the first run is still going.
    running, client = slow_host(tmp_path, 0.4, HostSettings(max_turn_records=5))
    key = {"Idempotency-Key": "one-booking"}
    try:
        with ThreadPoolExecutor(max_workers=40) as pool:
            replies = list(
                pool.map(
                    lambda _: running.request("POST", f"{BASE}/c1/turns", {"message": "book it"}, headers=key),
                    range(40),
                )
            )
        running.wait_idle()
        later = running.request("POST", f"{BASE}/c1/turns", {"message": "book it"}, headers=key)
        stored = running.host.store.read_state("conversation_assistant", "c1") if running.host else None
    finally:
        running.stop()

    assert len(client.calls) == 1
    assert {reply.status for reply in replies} <= {200, 202}
    turn_ids = {reply.json()["turnId"] for reply in replies if reply.status == 200}
    assert len(turn_ids) == 1 and later.json()["turnId"] in turn_ids
    assert later.status == 200 and later.json()["text"] == "reply 1: book it"
    assert stored is not None and len(json.loads(stored)["turns"]) == 1  # no record per retry


def test_a_retry_answered_202_reads_the_original_turn_at_its_own_location(serve: Serve) -> None:
    client = slow_model(0.4)
    running = serve(lambda: make_agent(client))
    key = {"Idempotency-Key": "later-read"}

    first = running.request("POST", f"{BASE}/c1/turns", {"message": "once", "wait": False}, headers=key)
    retry = running.request("POST", f"{BASE}/c1/turns", {"message": "once", "wait": False}, headers=key)
    running.request("POST", f"{BASE}/c1/turns", {"message": "once"}, headers=key)  # a waited retry: the turn is done
    location = retry.headers["location"].split("/api/", 1)[1]
    read = running.request("GET", f"/api/{location}")

    assert first.status == retry.status == 202
    assert retry.json()["turnId"] != first.json()["turnId"]  # each request names its own id for its key
    assert read.status == 200
    assert read.json()["turnId"] == first.json()["turnId"] and read.json()["text"] == "reply 1: once"
    assert len(client.calls) == 1


def test_a_retry_of_a_key_whose_receipt_expired_answers_410_and_never_runs_the_model_again(serve: Serve) -> None:
    client = ScriptedChatClient()
    running = serve(lambda: make_agent(client), HostSettings(max_turn_records=2))
    key = {"Idempotency-Key": "pay-once"}

    first = running.request("POST", f"{BASE}/c1/turns", {"message": "pay"}, headers=key)
    for number in range(2):
        running.request("POST", f"{BASE}/c1/turns", {"message": f"later {number}"})
    retry = running.request("POST", f"{BASE}/c1/turns", {"message": "pay"}, headers=key)
    again = running.request("POST", f"{BASE}/c1/turns", {"message": "pay"}, headers=key)
    turn_count = running.request("GET", f"{BASE}/c1").json()["turnCount"]

    assert first.status == 200
    assert (retry.status, retry.json()["error"]["code"]) == (410, "turn_expired")
    assert retry.json()["turnId"] == first.json()["turnId"]
    assert (again.status, again.json()["turnId"]) == (410, first.json()["turnId"])
    assert [call[-1].text for call in client.calls].count("pay") == 1
    assert turn_count == 3
