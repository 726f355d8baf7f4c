"""`kill -9` of the host at each step of a tool-calling turn, then a restart: the step in flight is the only one
that can run again, and a booking (the tool's side effect) that may have happened is asked about, not repeated.

The served app (`booking_app.py`) logs each model call and each booking before the step sleeps; the test kills
the process once the step's line appears, so the kill strikes inside that step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from booking_app import BOOKINGS_VARIABLE, MODEL_LOG_VARIABLE, STEP_SECONDS_VARIABLE
from local_host.served import ServedProcess, serve_command

from agent_host._conversation.checkpoints import MAY_HAVE_RUN_REASON

HERE = Path(__file__).resolve().parent
TURNS = "/api/agents/assistant/conversations/c1/turns"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(condition: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.005)


@pytest.mark.parametrize("kill_in", ["first_model_call", "tool", "second_model_call"])
def test_a_turn_killed_in_a_step_repeats_at_most_that_step_after_a_restart(kill_in: str, tmp_path: Path) -> None:
    model_log, bookings = tmp_path / "model.jsonl", tmp_path / "bookings.jsonl"
    env = {MODEL_LOG_VARIABLE: str(model_log), BOOKINGS_VARIABLE: str(bookings), STEP_SECONDS_VARIABLE: "1"}
    host = ServedProcess(tmp_path, serve_command("booking_app:app"), env, app_dir=HERE, request_timeout=10)
    struck = {
        "first_model_call": lambda: len(lines(model_log)) == 1,
        "tool": lambda: len(lines(bookings)) == 1,
        "second_model_call": lambda: len(lines(model_log)) == 2,
    }[kill_in]
    try:
        host.start()
        status, body = host.request("POST", TURNS, {"message": "book me to Oslo", "wait": False})
        assert status == 202, body
        wait_for(struck, f"the {kill_in} start")
        host.kill()
        host.start()
        turn = f"{TURNS}/{body['turnId']}"
        wait_for(lambda: host.request("GET", turn)[0] != 202, "the turn finish after the restart", timeout=60)
        status, record = host.request("GET", turn)
    finally:
        host.stop()

    calls = [line["call"] for line in lines(model_log)]
    assert status == 200, record
    assert len(lines(bookings)) == 1  # never booked twice
    if kill_in == "first_model_call":
        assert calls == [1, 1, 2]  # the call in flight, again; nothing journaled before it
        assert record["text"] == "done: booked Oslo"
    elif kill_in == "tool":
        assert calls == [1]  # the journaled first call is replayed, not made again
        (request,) = record["approvalRequests"]
        assert request["toolName"] == "book_flight" and request["reason"] == MAY_HAVE_RUN_REASON
    else:
        assert calls == [1, 2, 2]  # the first call and the booking replayed; the call in flight made again
        assert record["text"] == "done: booked Oslo"
