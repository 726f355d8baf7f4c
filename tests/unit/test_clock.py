"""The clock: one source of wall-clock time, and the CI run that shifts it."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import pytest
from apps import build_app, driver_for, make_agent
from clocks import ManualClock

from agent_host import Clock
from agent_host._clock import SystemClock


def test_the_system_clock_reads_the_wall_clock_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000

    now = SystemClock().now_ms()

    assert before <= now <= time.time_ns() // 1_000_000


def test_records_take_their_times_from_the_apps_clock(scripted) -> None:
    clock = ManualClock(1_234_567_890_000)
    driver = driver_for(build_app(make_agent(scripted), clock=clock), "assistant")

    record = driver.run_turn("t1", "hello")
    state = driver.decoded()

    assert isinstance(clock, Clock)
    assert record["at"] == state["createdAt"] == state["updatedAt"] == 1_234_567_890_000
    assert {message["at"] for message in state["messages"]} == {1_234_567_890_000}


@pytest.mark.skipif(not os.environ.get("CLOCK_SHIFT"), reason="only in CI's shifted-clock runs")
def test_the_shifted_run_really_moves_the_wall_clock() -> None:
    # datetime.now reads the OS clock directly; time.time is what sitecustomize shifted.
    shifted_by = time.time() - datetime.now(UTC).timestamp()

    assert abs(shifted_by) > 86400
