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


def killed_and_restarted(host: ServedProcess, body: dict[str, Any], struck: Any, what: str) -> dict[str, Any]:
    """Post the turn `body` (not waiting), kill the host once `struck()` holds, restart it, and return the turn's
    record once it has finished."""
    status, accepted = host.request("POST", TURNS, {**body, "wait": False})
    assert status == 202, accepted
    wait_for(struck, what)
    host.kill()
    host.start()
    turn = f"{TURNS}/{accepted['turnId']}"
    wait_for(lambda: host.request("GET", turn)[0] != 202, "the turn finish after the restart", timeout=60)
    status, record = host.request("GET", turn)
    assert status == 200, record
    return record


def booking_host(tmp_path: Path) -> tuple[ServedProcess, Path, Path]:
    """The served booking app, its steps slow; with its model log and its bookings log."""
    model_log, bookings = tmp_path / "model.jsonl", tmp_path / "bookings.jsonl"
    env = {MODEL_LOG_VARIABLE: str(model_log), BOOKINGS_VARIABLE: str(bookings), STEP_SECONDS_VARIABLE: "1"}
    return (
        ServedProcess(tmp_path, serve_command("booking_app:app"), env, app_dir=HERE, request_timeout=10),
        model_log,
        bookings,
    )


@pytest.mark.parametrize("kill_in", ["first_model_call", "tool", "second_model_call"])
def test_a_turn_killed_in_a_step_repeats_at_most_that_step_after_a_restart(kill_in: str, tmp_path: Path) -> None:
    host, model_log, bookings = booking_host(tmp_path)
    struck = {
        "first_model_call": lambda: len(lines(model_log)) == 1,
        "tool": lambda: len(lines(bookings)) == 1,
        "second_model_call": lambda: len(lines(model_log)) == 2,
    }[kill_in]
    try:
        host.start()
        record = killed_and_restarted(host, {"message": "book me to Oslo"}, struck, f"the {kill_in} start")
    finally:
        host.stop()

    calls = [line["call"] for line in lines(model_log)]
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


def test_an_approved_tool_killed_while_it_runs_is_asked_about_again_after_a_restart(tmp_path: Path) -> None:
    # An approved call runs before its turn's first model call: its start, not a journaled response, is the record.
    host, model_log, bookings = booking_host(tmp_path)
    try:
        host.start()
        asked = killed_and_restarted(
            host, {"message": "book me to Oslo"}, lambda: len(lines(bookings)) == 1, "the booking start"
        )
        (request,) = asked["approvalRequests"]
        approve = {"approvals": [{"id": request["id"], "approved": True}]}
        record = killed_and_restarted(host, approve, lambda: len(lines(bookings)) == 2, "the approved booking start")
    finally:
        host.stop()

    assert len(lines(bookings)) == 2  # the first attempt's booking and the approved one, never a third
    assert [line["call"] for line in lines(model_log)] == [1]
    (again,) = record["approvalRequests"]
    assert again["toolName"] == "book_flight" and again["reason"] == MAY_HAVE_RUN_REASON
