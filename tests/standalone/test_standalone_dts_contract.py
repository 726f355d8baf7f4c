"""Contract tests against a real Durable Task Scheduler (the service, or its emulator): what the in-memory backend
cannot show. They run when AGENT_HOST_TEST_DTS_ENDPOINT is set (AGENT_HOST_TEST_DTS_TASKHUB, "default" otherwise),
and are skipped otherwise: the in-memory backend keeps nothing across its own restart, and a worker killed with -9
mid-turn leaves its entity locked until that backend restarts, so crash recovery cannot be tested on it.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from durabletask.azuremanaged.client import DurableTaskSchedulerClient

from agent_host import HostSettings
from agent_host._contract import SCHEDULER_MAX_INSTANCE_ID_LENGTH
from agent_host.worker import AgentClient, Conversation

from .dts_worker import credential

ENDPOINT = os.environ.get("AGENT_HOST_TEST_DTS_ENDPOINT", "")
TASKHUB = os.environ.get("AGENT_HOST_TEST_DTS_TASKHUB", "default")
WORKER_SCRIPT = Path(__file__).with_name("dts_worker.py")
ROOT = Path(__file__).resolve().parents[2]
# A killed worker's work item comes back when the scheduler's lock on it expires.
RECOVERY_SECONDS = 300.0

pytestmark = pytest.mark.skipif(
    not ENDPOINT,
    reason="Durable Task Scheduler contract tests: set AGENT_HOST_TEST_DTS_ENDPOINT (and AGENT_HOST_TEST_DTS_TASKHUB) "
    "to a scheduler or its emulator; the in-memory backend cannot show crash recovery or the scheduler's batching",
)


@pytest.fixture
def client() -> Iterator[AgentClient]:
    scheduler = DurableTaskSchedulerClient(
        host_address=ENDPOINT,
        taskhub=TASKHUB,
        token_credential=credential(ENDPOINT),
        secure_channel=not ENDPOINT.startswith("http://"),
    )
    yield AgentClient(scheduler, settings=HostSettings(durable_task_scheduler=True))
    scheduler.close()


@contextmanager
def worker_process(log: Path, delay: float) -> Iterator[subprocess.Popen[bytes]]:
    """The worker in a process of its own, so it can be killed as a crash kills it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, str(WORKER_SCRIPT), ENDPOINT, TASKHUB, str(log), str(delay)], env=env)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def wait_for_lines(log: Path, count: int, timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"the model received {count} calls within {timeout:g} s only as far as {log}")


def conversation(client: AgentClient, conversation_id: str | None = None) -> Conversation:
    return client.conversation("assistant", conversation_id or f"dts-{secrets.token_hex(6)}")


def test_the_longest_conversation_id_the_budget_allows_is_accepted_by_the_scheduler(
    client: AgentClient, tmp_path: Path
) -> None:
    longest = SCHEDULER_MAX_INSTANCE_ID_LENGTH - len("@conversation_assistant@")
    target = conversation(client, "x" * (longest - 12) + secrets.token_hex(6))

    with worker_process(tmp_path / "calls.log", 0.0):
        first = target.send("My name is Ada.", timeout_seconds=60)
        second = target.send("What is my name?", timeout_seconds=60)

    assert first["text"] == "reply: My name is Ada."
    assert second["text"] == "reply: What is my name?"
    assert target.read()["turnCount"] == 2


def test_a_worker_killed_mid_batch_loses_no_turn_and_reruns_at_most_the_uncommitted_ones(
    client: AgentClient, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    target = conversation(client)
    # Queued before any worker runs, so the scheduler may hand all three over in one batch.
    turns = [target.send(f"turn {number}", wait=False)["turnId"] for number in range(3)]

    with worker_process(log, 3.0) as crashed:
        wait_for_lines(log, 2, RECOVERY_SECONDS)  # turn 0 answered, turn 1 inside its model call
        os.kill(crashed.pid, signal.SIGKILL)
    committed_before_crash = target.turn(turns[0])["status"] == "completed"
    with worker_process(log, 0.0):
        settled = [target.turn(turn_id, timeout_seconds=RECOVERY_SECONDS) for turn_id in turns]

    calls = log.read_text(encoding="utf-8").splitlines()
    assert [turn["status"] for turn in settled] == ["completed"] * 3
    assert target.read()["turnCount"] == 3
    # The scheduler's batching, measured: a turn committed before the crash never runs again; one finished in an
    # uncommitted batch runs once more (design.md: the host commits a batch's state once).
    assert calls.count("turn 0") == (1 if committed_before_crash else 2)
    assert calls.count("turn 2") == 1
    print(f"DTS committed turn 0 before the crash: {committed_before_crash}; model calls: {calls}")
