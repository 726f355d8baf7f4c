"""A served host stopped mid-queue: kill -9 re-runs at most the operation in flight, SIGTERM finishes only it.

`python -m agent_host serve --app slow_app:app` runs in a subprocess with a host.json of its own; the slow model logs
each call before it answers, so the log tells which turns ran the model, and how often, across the stop.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from slow_app import DELAY_VARIABLE, answer_to
from test_faults import BASE, ServedHost, poll_turn, read_calls

MODEL_SECONDS = 0.3
CONVERSATION = "queue"


def served(tmp_path: Path, batch_size: int) -> tuple[ServedHost, Path]:
    """A host whose host.json sets `maxEntityOperationBatchSize`; its model takes MODEL_SECONDS a call."""
    host_json = {"version": "2.0", "extensions": {"durableTask": {"maxEntityOperationBatchSize": batch_size}}}
    (tmp_path / "host.json").write_text(json.dumps(host_json), encoding="utf-8")
    call_log = tmp_path / "calls.jsonl"
    host = ServedHost(tmp_path, call_log)
    host.env[DELAY_VARIABLE] = str(MODEL_SECONDS)
    return host, call_log


def wait_for_calls(call_log: Path, count: int) -> list[str]:
    """Block until the model has been called `count` times; the last call is then in flight for MODEL_SECONDS."""
    deadline = time.monotonic() + 30
    while len(calls := read_calls(call_log)) < count:
        assert time.monotonic() < deadline, f"the model was called {len(calls)} times, expected {count}"
        time.sleep(0.005)
    return calls


def queue_turns(host: ServedHost, call_log: Path, count: int) -> list[tuple[str, str]]:
    """Queue `count` turns: the first runs alone, the others arrive while its model call runs (the next batch)."""
    turns = []
    for number in range(count):
        message = f"turn {number}"
        status, body = host.request("POST", f"{BASE}/{CONVERSATION}/turns", {"message": message, "wait": False})
        assert status == 202, body
        turns.append((message, body["turnId"]))
        if number == 0:
            wait_for_calls(call_log, 1)
    # The scenario needs every later turn queued before turn 0's model call ends (then they form one batch).
    assert len(read_calls(call_log)) == 1, "posting the turns took longer than one model call; raise MODEL_SECONDS"
    return turns


def finish_after_restart(host: ServedHost, turns: list[tuple[str, str]]) -> list[str]:
    """Restart, wait for every turn's answer, check each, and return the stored transcript's user messages."""
    host.start()
    deadline = time.monotonic() + 30
    for message, turn_id in turns:
        status, body = poll_turn(host, CONVERSATION, turn_id, deadline)
        assert (status, body.get("status"), body.get("text")) == (200, "completed", answer_to(message)), body
    status, history = host.request("GET", f"{BASE}/{CONVERSATION}/messages")
    assert status == 200, history
    return [m["text"] for m in history["messages"] if m["role"] == "user"]


# A kill loses the running batch; its finished turns (1 and 2 in a batch of 20) replay their checkpointed model
# calls after the restart (docs/exactly-once.md), so only the call in flight (turn 3) runs again either way.
@pytest.mark.parametrize(
    ("batch_size", "finished_turn_reads", "rerun"),
    [(1, 200, ["turn 3"]), (20, 202, ["turn 3"])],
    ids=["batch-size-1", "batch-size-20"],
)
def test_kill_9_reruns_only_what_was_not_committed(
    tmp_path: Path, batch_size: int, finished_turn_reads: int, rerun: list[str]
) -> None:
    host, call_log = served(tmp_path, batch_size)
    try:
        host.start()
        turns = queue_turns(host, call_log, 6)
        wait_for_calls(call_log, 3)  # turn 1's model call has finished, turn 2's runs
        finished_read, _ = host.request("GET", f"{BASE}/{CONVERSATION}/turns/{turns[1][1]}")
        calls_at_kill = wait_for_calls(call_log, 4)  # turn 3's model call is in flight
        host.kill()
        transcript = finish_after_restart(host, turns)
    finally:
        host.stop()
    calls_after = read_calls(call_log)[len(calls_at_kill) :]

    print(f"\nmaxEntityOperationBatchSize={batch_size}: {len(rerun)} turns ran the model again after kill -9")
    assert calls_at_kill == ["turn 0", "turn 1", "turn 2", "turn 3"]
    # With batches, a finished turn is readable only once its whole batch commits, and a kill loses the batch.
    assert finished_read == finished_turn_reads
    assert [message for message in calls_after if message in calls_at_kill] == rerun
    assert sorted(calls_after) == sorted([*rerun, "turn 4", "turn 5"])
    assert transcript == [message for message, _ in turns]


@pytest.mark.parametrize(("batch_size", "calls_at_exit"), [(1, 2), (20, 5)], ids=["batch-size-1", "batch-size-20"])
def test_sigterm_finishes_the_running_batch_and_leaves_the_rest_queued(
    tmp_path: Path, batch_size: int, calls_at_exit: int
) -> None:
    host, call_log = served(tmp_path, batch_size)
    try:
        host.start()
        turns = queue_turns(host, call_log, 5)
        wait_for_calls(call_log, 2)  # turn 1, the first of the second batch, is running
        assert host.process is not None
        stopping = time.monotonic()
        host.process.terminate()  # SIGTERM
        exit_code = host.process.wait(30)
        stopped_after = time.monotonic() - stopping
        calls_at_exit_seen = read_calls(call_log)
        transcript = finish_after_restart(host, turns)
    finally:
        host.stop()

    print(
        f"\nmaxEntityOperationBatchSize={batch_size}: SIGTERM took {stopped_after:.2f} s, model calls at exit "
        f"{len(calls_at_exit_seen)}"
    )
    assert exit_code == 0
    assert len(calls_at_exit_seen) == calls_at_exit
    assert sorted(read_calls(call_log)) == sorted(message for message, _ in turns)  # nothing ran twice
    assert transcript == [message for message, _ in turns]
